#include "agent/shared_run/shared_run.h"

#include <spdlog/spdlog.h>

#include "common/error.h"

namespace ddprun::agent {
namespace {

// "<address> <port>\n<run name>": where the other agents send their records, and into
// which run.
std::string shared_run_key(const std::string& run_id) {
  return "ddprun/tracking/" + run_id + "/endpoint";
}

}  // namespace

Task<void> SharedRun::publish(rendezvous::RendezvousHandler& handler, CancelSignal& cancel) {
  std::string run = observer_.attach(handler.address(), handler.primary());
  if (run.empty()) co_return;
  const std::string key = shared_run_key(run_id_);
  try {
    co_await handler.loop_store().set(key, run, cancel);
  } catch (const Error& e) {
    if (cancel.cancelled()) throw;
    spdlog::error("tracking: publishing the run for the other nodes failed: {}", e.what());
  }
}

Task<std::string> SharedRun::primary(rendezvous::RendezvousHandler& handler, CancelSignal& cancel) {
  if (handler.primary()) co_return "";
  if (!primary_) {
    std::vector<std::string> keys(1, shared_run_key(run_id_));
    try {
      auto values = co_await handler.loop_store().get_now(keys, cancel);
      primary_ = values.at(0).value_or("");
    } catch (const Error& e) {
      if (cancel.cancelled()) throw;
      spdlog::error("tracking: finding the primary agent's run failed: {}", e.what());
      primary_ = "";
    }
  }
  co_return *primary_;
}

}  // namespace ddprun::agent
