#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "agent/preflight/node_checks.h"

namespace ddprun::agent {

/// Runs the site's health check (--health_check) with /bin/sh -c: in a process group
/// of its own, which is killed when the check ends and dies with ddprun. nullopt when
/// it exits 0; else a finding that gives its exit status (or that it gave no verdict
/// within `timeout`) and the last lines it wrote to stdout or stderr. A stop signal
/// meanwhile (`interrupt_fd` readable: one waits for the agent's loop) kills it at
/// once and throws net::Interrupted.
std::optional<Finding> run_health_command(const std::string& command,
                                          std::chrono::milliseconds timeout, int interrupt_fd);

}  // namespace ddprun::agent
