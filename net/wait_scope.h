#pragma once

#include <poll.h>

#include <chrono>
#include <optional>

#include "common/error.h"

namespace ddprun::net {

/// A blocking wait gave way: a stop signal waits for the loop to handle it, or a wait
/// of a stopping job ran out of time (see WaitScope). Neither a StoreError nor
/// a TimeoutError, so that no retry loop takes it for a failed attempt.
class Interrupted : public Error {
 public:
  using Error::Error;
};

/// Bounds every blocking wait of net::Socket on the thread that made it (connecting,
/// sending, reading, the pauses between connection attempts), while it lives:
/// - a wait ends with Interrupted as soon as `interrupt_fd` is readable: the read end
///   of the pipe a signal handler writes to, readable until the event loop takes the
///   signal (nothing here reads it);
/// - once limit_each() was called, no wait lasts longer than that.
/// The agent's loop thread holds one for the job: the quick store requests it makes
/// between its asynchronous waits never hold up a Ctrl-C, and its last words to a
/// frozen store are bounded. Other threads (the store server, tracking) are not
/// affected. A socket whose wait gave way is closed: its stream is at an unknown point.
///
/// Thread-safety: used on the thread that made it. One per thread at a time: a newer
/// one replaces it (tests make several agents), and while none is alive, waits are
/// bounded by their deadlines only.
class WaitScope {
 public:
  explicit WaitScope(int interrupt_fd);
  ~WaitScope();
  WaitScope(const WaitScope&) = delete;
  WaitScope& operator=(const WaitScope&) = delete;

  /// From now on, every wait ends within `most` (Interrupted: "no answer while
  /// stopping") where its own deadline is later.
  void limit_each(std::chrono::milliseconds most) { limit_ = most; }

 private:
  friend int wait_ready(pollfd& p, std::chrono::steady_clock::time_point deadline);
  friend void pause(std::chrono::milliseconds d);
  int interrupt_fd_;
  std::optional<std::chrono::milliseconds> limit_;
};

/// poll() on `p` until `deadline`, within the calling thread's WaitScope if any: > 0
/// when `p` is ready (its revents set), 0 when the deadline passed. Restarts after a
/// signal's handler ran. Throws Interrupted; SystemError if poll fails.
int wait_ready(pollfd& p, std::chrono::steady_clock::time_point deadline);

/// Sleeps `d` (a backoff between attempts), within the calling thread's WaitScope if
/// any. Throws Interrupted.
void pause(std::chrono::milliseconds d);

}  // namespace ddprun::net
