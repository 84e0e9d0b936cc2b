#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include "common/clock.h"

namespace ddprun::agent {

/// torchrun's worker watchdog (`TORCHELASTIC_ENABLE_FILE_TIMER=1`): workers ask for a
/// deadline by writing one JSON line per request to a FIFO the agent made
/// (`TORCHELASTIC_TIMER_FILE`): `{"version": 1, "pid": P, "scope_id": S,
/// "expiration_time": wall-clock seconds, or -1 to release the scope, "signal": N}`,
/// as `torch.distributed.elastic.timer.FileTimerClient` writes them. When a deadline
/// passes, the request's signal goes to its pid (the earliest expired scope with a
/// signal, as torchrun picks), and that pid's timers are forgotten.
///
/// Beyond torchrun: the FIFO is the user's alone (mode 0600); only a process of one of
/// this node's workers may set a timer (a request from any other pid is ignored and
/// logged once: nobody else can have the agent signal a process); the deadline is a
/// timer at the earliest expiry, not a poll every 0.1 s; an expired scope without a
/// signal is logged once and dropped; malformed lines are logged once and skipped.
/// Single-threaded: the agent's loop thread.
class TimerWatchdog {
 public:
  /// A deadline that passed.
  struct Expiry {
    pid_t pid = 0;
    int local_rank = 0;
    std::string scope;
    int signal = 0;
    double length_seconds = 0;  // the timer's length, as set (`expires(after=N)`)
    double overdue_seconds = 0;
  };
  /// The local rank of the worker a pid belongs to (the worker or a process of its
  /// session); nullopt for any other pid.
  using FindOwner = std::function<std::optional<int>(pid_t)>;
  using WallClock = std::function<double()>;

  /// Makes the FIFO at `path` (whatever was there is replaced) and reads it on `io`.
  /// Throws SystemError naming the path.
  TimerWatchdog(boost::asio::io_context& io, Clock& clock, std::string path,
                WallClock wall = nullptr);
  ~TimerWatchdog();  // removes the FIFO
  TimerWatchdog(const TimerWatchdog&) = delete;
  TimerWatchdog& operator=(const TimerWatchdog&) = delete;

  const std::string& path() const { return path_; }
  /// Takes requests of this attempt's workers from now.
  void start(FindOwner owner, std::function<void(const Expiry&)> expired);
  /// The attempt is over: every timer is forgotten, requests are read and dropped.
  void stop();
  /// Timers set now.
  size_t timers() const { return timers_.size(); }

 private:
  struct Request {
    int local_rank = 0;
    int signal = 0;
    double expiration = 0;               // wall clock
    double length = 0;                   // seconds from its arrival to its expiration
    std::chrono::milliseconds deadline;  // on `clock_`
  };

  void read();
  void on_line(const std::string& line);
  void arm();
  void fire();
  void warn_once(const std::string& what, const std::string& key);

  Clock& clock_;
  std::string path_;
  WallClock wall_;
  int write_end_ = -1;  // held, so that the read end never sees the end of the file
  boost::asio::posix::stream_descriptor fifo_;
  std::unique_ptr<Timer> timer_;
  std::string pending_;  // bytes of a line not ended yet
  char buffer_[4096];
  bool watching_ = false;
  FindOwner owner_;
  std::function<void(const Expiry&)> expired_;
  std::map<std::pair<pid_t, std::string>, Request> timers_;
  std::set<std::string> warned_;
};

}  // namespace ddprun::agent
