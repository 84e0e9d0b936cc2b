#pragma once

#include <chrono>
#include <csignal>
#include <string>

namespace ddprun::agent {

/// Exit status of a job stopped because a rank hung and no restart was left.
constexpr int kHangExitCode = 124;
/// Exit status of a job stopped because it hung again after restarts that got no rank
/// past the step where it hung before (--max_no_progress_restarts): requeuing it
/// would only repeat that.
constexpr int kNoProgressExitCode = 125;

/// The signal that makes a Python worker started by ddprun dump every thread's stack
/// (faulthandler, registered by ddprun's sitecustomize.py, told the number in
/// DDPRUN_STACK_SIGNAL). A real-time signal nobody else uses.
inline int stack_dump_signal() { return SIGRTMIN + 6; }

/// When a worker counts as hung (--hang_timeout and friends). Plain data.
struct HangOptions {
  enum class Mode {
    kOff,    // never (the default: a quiet program is never killed by surprise)
    kFixed,  // no progress for `timeout`
    kAuto,   // no progress for `factor` x the longest interval seen, at least `min_timeout`
  };
  Mode mode = Mode::kOff;
  std::chrono::milliseconds timeout{0};
  /// Until a worker's first progress signals (its warm-up in auto mode).
  std::chrono::milliseconds initial_timeout{std::chrono::minutes(30)};
  double factor = 5;
  std::chrono::milliseconds min_timeout{std::chrono::seconds(60)};
  /// Restarts in a row after a hang that get no rank past the step it hung at before
  /// the job stops with kNoProgressExitCode.
  int max_no_progress_restarts = 3;
  /// A rank still running this long after every other rank of its node exited 0 is
  /// named on the console, hang detection on or off (0: never). A warning only.
  std::chrono::milliseconds straggler_warning{std::chrono::minutes(5)};

  bool enabled() const { return mode != Mode::kOff; }
};

}  // namespace ddprun::agent
