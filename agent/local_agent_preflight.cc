// LocalAgent's preflight before each join: what the component (agent/preflight/
// node_preflight.h) finds, and what a node that fails it does: it says why, tells the
// others (before its first join, by reaching their store for that alone) and ends
// with kPreflightExitCode; the others of an elastic job go on without it, and its
// heartbeat ends with it. A stop signal meanwhile ends the checks at once.
#include <spdlog/spdlog.h>

#include "agent/local_agent_impl.h"
#include "rendezvous/rendezvous_factory.h"

namespace ddprun::agent {

Task<std::optional<int>> LocalAgent::Impl::unfit_node() {
  // On the heap: held in this frame, GCC 12 takes the frame's delete for a mismatched
  // one (docs/contributing.md).
  auto cancel = std::make_unique<CancelSignal>("health check cancelled");
  auto found =
      co_await unless_signalled(preflight_.findings(runner_.left_behind(), !handler_, *cancel),
                                [c = cancel.get()] { c->cancel(); });
  if (found.empty()) co_return std::nullopt;
  std::string cause = preflight_.say_unfit(found);
  if (!handler_) co_await tell_unfit(cause);
  if (handler_) co_await handler_->keep_out(cause, stop_.after_stop());
  co_return end_.finish(kPreflightExitCode, "failed", cause);
}

// Preflight's clock check, once the rendezvous host answers (before the first join):
// the run orders every node's records by wall time, and a clock far off says the
// node's time service is broken. Returns the cause the node leaves for, if it does.
Task<std::optional<std::string>> LocalAgent::Impl::unfit_clock() {
  if (!preflight_.checks_clock()) co_return std::nullopt;
  auto cancel = std::make_unique<CancelSignal>("clock check cancelled");
  auto offset = co_await unless_signalled(handler_->clock_offset(*cancel),
                                          [c = cancel.get()] { c->cancel(); });
  auto off = preflight_.clock(offset);
  if (!off) co_return std::nullopt;
  co_return preflight_.say_unfit({*off});
}

// Before its first join, a node that failed its preflight reaches the others only to
// tell them why it stays out; a stop signal ends that at once.
Task<void> LocalAgent::Impl::tell_unfit(const std::string& cause) {
  if (!services_.tell_unfit || !multi_node()) co_return;
  spdlog::warn("telling the other nodes why this node stays out (at most {} s)",
               rendezvous::kUnfitWait.count());
  auto cancel = std::make_unique<CancelSignal>("preflight notice cancelled");
  try {
    co_await unless_signalled(services_.tell_unfit(cause, *cancel),
                              [c = cancel.get()] { c->cancel(); });
  } catch (const Signalled&) {
    throw;
  } catch (const std::exception& e) {
    spdlog::error("the other nodes could not be told: {}", e.what());
  }
}

}  // namespace ddprun::agent
