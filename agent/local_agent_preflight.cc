#include "agent/local_agent_impl.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "agent/preflight/health_command.h"
#include "rendezvous/rendezvous_factory.h"

// LocalAgent's preflight before each join: the node's checks, the clock against the
// rendezvous host's, and what a node that fails them says and tells the others.
namespace ddprun::agent {

// Before each join, this node's preflight (agent/preflight/), and whether a worker of
// its last attempt was left behind unkillable: a node that fails it does not join. It says why, tells the others (before its first join, by reaching
// their store for that alone) and ends here with kPreflightExitCode; the others of an
// elastic job go on without it, and its heartbeat ends with it. The site's own check
// (--health_check) runs before the first join only, so that a restart never waits for
// it; a stop signal meanwhile ends it at once.
Task<std::optional<int>> LocalAgent::Impl::unfit_node() {
  std::vector<Finding> found = check_node(config_.preflight, probe_);
  // A worker SIGKILL could not end is stuck in the kernel (a dead mount, a wedged
  // driver): this host is unhealthy, and a restart here would meet the same.
  for (const auto& w : runner_.left_behind()) {
    found.push_back({"workers", w + " could not be killed and was left behind"});
  }
  if (!handler_ && !config_.preflight.health_command.empty()) {
    CancelSignal cancel("health check cancelled");
    auto health = co_await unless_signalled(
        run_health_command(config_.preflight.health_command, config_.preflight.health_timeout,
                           cancel),
        [&cancel] { cancel.cancel(); });
    if (health) found.push_back(std::move(*health));
  }
  if (found.empty()) co_return std::nullopt;
  std::string cause = say_unfit(found);
  if (!handler_) co_await tell_unfit(cause);
  if (handler_) co_await handler_->keep_out(cause, last_words_cancel_);
  co_return leave_unfit(cause);
}

// Preflight's clock check, once the rendezvous host answers (before the first join):
// the run orders every node's records by wall time, and a clock far off says the
// node's time service is broken. Returns the cause the node leaves for, if it does.
Task<std::optional<std::string>> LocalAgent::Impl::unfit_clock() {
  std::optional<std::string> cause;
  const auto& checks = config_.preflight.checks;
  if (std::find(checks.begin(), checks.end(), Check::kClock) == checks.end()) co_return cause;
  CancelSignal cancel("clock check cancelled");
  auto offset = co_await unless_signalled(handler_->clock_offset(cancel),
                                          [&cancel] { cancel.cancel(); });
  if (offset) spdlog::debug("preflight: clock: {} ms to the rendezvous host's", offset->count());
  if (!offset || std::chrono::abs(*offset) <= PreflightOptions::kClockWarning) co_return cause;
  std::string what = "this node's wall clock is " +
                     std::to_string(std::chrono::abs(*offset).count()) + " ms " +
                     (offset->count() > 0 ? "behind" : "ahead of") +
                     " the rendezvous host's (check the time service: chronyc tracking, "
                     "timedatectl)";
  if (std::chrono::abs(*offset) <= PreflightOptions::kClockLimit) {
    spdlog::warn("preflight: clock: {}", what);
    co_return cause;
  }
  cause = say_unfit(
      {{"clock", what + "; more than " +
                     std::to_string(PreflightOptions::kClockLimit.count() / 1000) + " s off"}});
  co_return cause;
}

// Says on the console why this node failed its preflight; returns the cause the run
// and the other nodes are given.
std::string LocalAgent::Impl::say_unfit(const std::vector<Finding>& found) {
  std::string cause = "preflight failed on " + host_;
  for (const auto& f : found) {
    spdlog::error("preflight: {}: {}", f.check, f.problem);
    cause += "; " + f.check + ": " + f.problem;
  }
  spdlog::error("this node does not join the job (exit status {}; --preflight and "
                "--health_check say what is checked)",
                kPreflightExitCode);
  return cause;
}

// Before its first join, a node that failed its preflight reaches the others only to
// tell them why it stays out; a stop signal ends that at once.
Task<void> LocalAgent::Impl::tell_unfit(const std::string& cause) {
  if (!tell_unfit_ || !multi_node()) co_return;
  spdlog::warn("telling the other nodes why this node stays out (at most {} s)",
               rendezvous::kUnfitWait.count());
  CancelSignal cancel("preflight notice cancelled");
  try {
    co_await unless_signalled(tell_unfit_(cause, cancel), [&cancel] { cancel.cancel(); });
  } catch (const Signalled&) {
    throw;
  } catch (const std::exception& e) {
    spdlog::error("the other nodes could not be told: {}", e.what());
  }
}

// A node that failed its preflight ends (once it reached the others, they were told why
// it is out: quarantined with it).
int LocalAgent::Impl::leave_unfit(const std::string& cause) {
  return finish(kPreflightExitCode, "failed", cause);
}

}  // namespace ddprun::agent
