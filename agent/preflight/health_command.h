#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "agent/preflight/node_checks.h"
#include "common/cancel_signal.h"
#include "common/coro.h"

namespace ddprun::agent {

/// Runs the site's health check (--health_check) with /bin/sh -c: in a process group
/// of its own, which is killed when the check ends and dies with ddprun. nullopt when
/// it exits 0; else a finding that gives its exit status (or that it gave no verdict
/// within `timeout`) and the last lines it wrote to stdout or stderr. From a coroutine
/// on a loop, which goes on meanwhile: its output and its exit are awaited. `cancel`
/// kills it at once and throws Error.
Task<std::optional<Finding>> run_health_command(std::string command,
                                                std::chrono::milliseconds timeout,
                                                CancelSignal& cancel);

}  // namespace ddprun::agent
