// The job's one experiment-tracking run across nodes: the primary agent's run takes the
// other agents' records. Where it listens is shared through the rendezvous store, on
// the loop: the primary publishes it before it joins a round, and every other node
// reads it once, at its first round. Tracking itself knows no store.
#include <spdlog/spdlog.h>

#include "agent/local_agent_impl.h"

namespace ddprun::agent {
namespace {

// "<address> <port>\n<run name>": where the other agents send their records, and into
// which run.
std::string shared_run_key(const std::string& run_id) {
  return "ddprun/tracking/" + run_id + "/endpoint";
}

}  // namespace

Task<void> LocalAgent::Impl::publish_shared_run() {
  if (!observer_ || !multi_node()) co_return;
  std::string run = observer_->attach(handler_->address(), handler_->primary());
  if (run.empty()) co_return;
  CancelSignal cancel("publishing the run cancelled");
  try {
    co_await unless_signalled(handler_->loop_store().set(shared_run_key(config_.run_id), run, cancel),
                              [&cancel] { cancel.cancel(); });
  } catch (const Error& e) {
    // Tracking never stops training: the others' records stay on their nodes.
    spdlog::error("tracking: publishing the run for the other nodes failed: {}", e.what());
  }
}

Task<std::string> LocalAgent::Impl::shared_run() {
  if (!observer_ || !multi_node() || handler_->primary()) co_return "";
  if (!shared_run_) {
    CancelSignal cancel("finding the run cancelled");
    std::vector<std::string> keys(1, shared_run_key(config_.run_id));
    try {
      auto values = co_await unless_signalled(handler_->loop_store().get_now(keys, cancel),
                                              [&cancel] { cancel.cancel(); });
      shared_run_ = values.at(0).value_or("");
    } catch (const Error& e) {
      spdlog::error("tracking: finding the primary agent's run failed: {}", e.what());
      shared_run_ = "";
    }
  }
  co_return *shared_run_;
}

}  // namespace ddprun::agent
