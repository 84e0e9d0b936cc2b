#pragma once

#include <chrono>

#include "common/cancel_signal.h"
#include "common/coro.h"

namespace ddprun {

// The waits a coroutine on a loop makes: each is a completion of the loop, and its
// CancelSignal ends it (Error, with the signal's words) the moment it is cancelled.

/// Sleeps for `d`.
Task<void> sleep_for(std::chrono::microseconds d, CancelSignal& cancel);

/// Until `fd` is readable (true: a read will not block, or will report an error) or
/// `deadline` passes (false; true where it is readable by then all the same). `fd` is
/// only watched: the caller owns it and may close it once this returns.
Task<bool> wait_readable(int fd, std::chrono::steady_clock::time_point deadline,
                         CancelSignal& cancel);

/// The same until `fd` is writable (a connect in progress has ended, either way).
Task<bool> wait_writable(int fd, std::chrono::steady_clock::time_point deadline,
                         CancelSignal& cancel);

}  // namespace ddprun
