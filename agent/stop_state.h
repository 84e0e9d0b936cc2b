#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "common/cancel_signal.h"
#include "common/clock.h"

namespace ddprun::agent {

/// What a stop signal to ddprun (SIGTERM, Ctrl-C, ...) sets going for the job on this
/// node: the signal, kept as the job's end; a deadline for what the agent still asks of
/// the other nodes (telling them why, leaving the rendezvous), past which those requests
/// are cancelled, so that a frozen store host does not hold up a Ctrl-C; and the end of
/// the wait for the other nodes in progress, if one is.
///
/// Thread-safety: the loop's thread only.
class StopState {
 public:
  /// How long each request to the others may wait once a stop signal came.
  static constexpr std::chrono::seconds kLastWordsWait{3};

  explicit StopState(Clock& clock) : deadline_(clock.make_timer()) {}

  /// The first stop signal; 0 while none came.
  int signal() const { return signal_; }
  bool deadline_passed() const { return deadline_passed_; }
  /// Cancelled once the deadline passed: what the agent asks of the others after a
  /// stop signal waits on it.
  CancelSignal& after_stop() { return after_stop_; }

  /// The first stop signal came: keeps it and starts the deadline; `on_deadline` once it
  /// passed.
  void stop(int sig, std::function<void()> on_deadline);

  /// A wait for the other nodes begins: `cancel` ends it at once (now, if a stop
  /// signal came already). The wait ends with end_wait().
  void begin_wait(std::function<void()> cancel);
  void end_wait() { cancel_wait_ = nullptr; }
  bool waiting() const { return static_cast<bool>(cancel_wait_); }
  /// Ends the wait in progress, if one is.
  void cancel_wait() {
    if (cancel_wait_) cancel_wait_();
  }

 private:
  int signal_ = 0;
  std::unique_ptr<Timer> deadline_;
  bool deadline_passed_ = false;
  CancelSignal after_stop_{"no answer while stopping"};
  std::function<void()> cancel_wait_;  // ends the wait for the other nodes in progress
};

}  // namespace ddprun::agent
