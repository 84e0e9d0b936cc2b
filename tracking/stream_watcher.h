#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace ddprun::tracking {

/// Runs `pass(final)` on a thread of its own whenever files in `dir` are written
/// (inotify; writes that come close together share one pass), when `nudge` asks for
/// one, and at least every `interval`. `final_pass()` runs the last pass with
/// final=true and returns when it is done; `request_final` and `await_final` are its
/// two halves, for a caller with other work meanwhile. A final pass asked for runs
/// before the destructor's stop: request_final() then the destructor wakes the thread
/// once. The callback reports its own errors and must not throw.
///
/// The inotify watch starts only `watch_after` into the watcher's life; until then a
/// pass runs every kEarlyPoll. Closing an inotify instance waits for a kernel grace
/// period (10-15 ms here, even with its watch removed first), which a job of a few
/// milliseconds would otherwise spend at its exit.
class StreamWatcher {
 public:
  static constexpr std::chrono::milliseconds kEarlyPoll{50};

  StreamWatcher(const std::string& dir, std::chrono::milliseconds interval,
                std::function<void(bool final)> pass,
                std::chrono::milliseconds watch_after = std::chrono::seconds(1));
  ~StreamWatcher();
  StreamWatcher(const StreamWatcher&) = delete;
  StreamWatcher& operator=(const StreamWatcher&) = delete;

  /// A pass no later than `within` from now (nudges close together share one).
  void nudge(std::chrono::milliseconds within);

  void final_pass() { await_final(request_final()); }
  /// Asks for a final pass; the ticket says which one `await_final` waits for.
  uint64_t request_final();
  /// The thread ends without another pass (one under way completes), the caller taking
  /// the last one with finish_here(): no wake of the thread or of the caller on the way
  /// (a thread asleep on an idle CPU of a VM takes a few hundred microseconds to wake).
  void stop_soon();
  /// The thread joined (stopped soon, if it was not), the final pass on this thread. A
  /// final pass asked for after it runs in the destructor, on its caller's thread.
  void finish_here();
  void await_final(uint64_t ticket);
  /// Whether await_final(ticket) would return at once.
  bool final_done(uint64_t ticket);

 private:
  using Clock = std::chrono::steady_clock;

  void loop();
  void start_watching();

  std::string dir_;
  std::function<void(bool)> pass_;
  std::chrono::milliseconds interval_;
  std::chrono::milliseconds watch_after_;
  int inotify_fd_ = -1;  // the thread's until it is joined; -1 until the watch starts
  int watch_ = -1;
  int wake_fd_ = -1;  // eventfd: a nudge, a final pass or the destructor
  std::mutex mutex_;
  std::condition_variable done_cv_;
  uint64_t finals_requested_ = 0;  // final_pass() calls so far
  uint64_t finals_done_ = 0;       // requests covered by a final pass that has ended
  Clock::time_point pass_due_ = Clock::time_point::max();        // by nudge()
  Clock::time_point sleeping_until_ = Clock::time_point::min();  // min: awake
  bool stop_ = false;
  bool caller_finishes_ = false;  // stop_soon(): the thread ends without another pass
  std::thread thread_;
};

}  // namespace ddprun::tracking
