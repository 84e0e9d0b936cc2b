#include "agent/preflight/node_preflight.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "agent/preflight/health_command.h"

namespace ddprun::agent {

NodePreflight::NodePreflight(const PreflightOptions& options, NodeProbe* probe, std::string host)
    : options_(options),
      own_probe_(probe ? nullptr : std::make_unique<PosixNodeProbe>()),
      probe_(probe ? *probe : *own_probe_),
      host_(std::move(host)) {}

Task<std::vector<Finding>> NodePreflight::findings(const std::vector<std::string>& left_behind,
                                                   bool first, CancelSignal& cancel) {
  std::vector<Finding> found = check_node(options_, probe_);
  for (const auto& w : left_behind) {
    found.push_back({"workers", w + " could not be killed and was left behind"});
  }
  if (first && !options_.health_command.empty()) {
    auto health =
        co_await run_health_command(options_.health_command, options_.health_timeout, cancel);
    if (health) found.push_back(std::move(*health));
  }
  co_return found;
}

bool NodePreflight::checks_clock() const {
  const auto& checks = options_.checks;
  return std::find(checks.begin(), checks.end(), Check::kClock) != checks.end();
}

std::optional<Finding> NodePreflight::clock(std::optional<std::chrono::milliseconds> offset) const {
  if (offset) spdlog::debug("preflight: clock: {} ms to the rendezvous host's", offset->count());
  if (!offset || std::chrono::abs(*offset) <= PreflightOptions::kClockWarning) return std::nullopt;
  std::string what = "this node's wall clock is " +
                     std::to_string(std::chrono::abs(*offset).count()) + " ms " +
                     (offset->count() > 0 ? "behind" : "ahead of") +
                     " the rendezvous host's (check the time service: chronyc tracking, "
                     "timedatectl)";
  if (std::chrono::abs(*offset) <= PreflightOptions::kClockLimit) {
    spdlog::warn("preflight: clock: {}", what);
    return std::nullopt;
  }
  return Finding{"clock", what + "; more than " +
                              std::to_string(PreflightOptions::kClockLimit.count() / 1000) +
                              " s off"};
}

std::string NodePreflight::say_unfit(const std::vector<Finding>& found) const {
  std::string cause = "preflight failed on " + host_;
  for (const auto& f : found) {
    // A built-in check says how to leave it out (the site's --health_check is its own).
    bool built_in = f.check != "health_check";
    spdlog::error("preflight: {}: {}{}", f.check, f.problem,
                  built_in ? " (--preflight=-" + f.check + " leaves this check out)" : "");
    cause += "; " + f.check + ": " + f.problem;
  }
  spdlog::error(
      "this node does not join the job (exit status {}; --preflight and "
      "--health_check say what is checked)",
      kPreflightExitCode);
  return cause;
}

}  // namespace ddprun::agent
