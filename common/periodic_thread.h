#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace ddprun {

/// A named thread that does one thing every `interval` until it is stopped: this
/// node's heartbeat or etcd lease, whose proof of life must not wait on the agent's
/// loop. stop() (or the destructor) wakes it from its pause at once and joins it.
///
/// Thread-safety: stop() and stopping() from any thread; `tick` runs on the thread.
class PeriodicThread {
 public:
  enum class First { kAtOnce, kAfterInterval };

  /// `tick` is handed this thread (to ask stopping()); it returns false to end the
  /// thread early (the thing it does is gone).
  using Tick = std::function<bool(const PeriodicThread&)>;

  /// Starts the thread.
  PeriodicThread(std::string name, std::chrono::milliseconds interval, First first, Tick tick);
  ~PeriodicThread() { stop(); }
  PeriodicThread(const PeriodicThread&) = delete;
  PeriodicThread& operator=(const PeriodicThread&) = delete;

  /// Ends the thread: `interrupt` runs first (it makes a tick blocked in a call of its
  /// own, a store request, fail promptly), then the thread is joined. Idempotent.
  void stop(const std::function<void()>& interrupt = {});
  /// True once stop() was called: a tick that fails then says nothing.
  bool stopping() const { return stopping_; }
  /// From a tick: waits `pause` unless stop() comes first; true when stopping.
  bool rest(std::chrono::milliseconds pause) const;

 private:
  void run(const std::string& name, std::chrono::milliseconds interval, First first,
           const Tick& tick);

  mutable std::mutex mutex_;
  mutable std::condition_variable wake_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace ddprun
