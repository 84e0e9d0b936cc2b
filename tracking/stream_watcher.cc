#include "tracking/stream_watcher.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>

#include "common/error.h"
#include "common/thread_name.h"

namespace ddprun::tracking {
namespace {

// Writes closer together than this share one pass.
constexpr std::chrono::milliseconds kSettle{20};

void drain_fd(int fd) {
  char buf[4096];
  while (::read(fd, buf, sizeof(buf)) > 0) {
  }
}

}  // namespace

StreamWatcher::StreamWatcher(const std::string& dir, std::chrono::milliseconds interval,
                             std::function<void(bool)> pass, std::chrono::milliseconds watch_after)
    : dir_(dir), pass_(std::move(pass)), interval_(interval), watch_after_(watch_after) {
  wake_fd_ = static_cast<int>(check_syscall(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), "eventfd"));
  // The thread never takes the process's signals (SIGCHLD and the stop signals are
  // the agent's loop's business).
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  thread_ = std::thread([this] {
    name_this_thread("ddprun-streams");
    loop();
  });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

StreamWatcher::~StreamWatcher() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
  if (finals_requested_ > finals_done_) {  // asked for once the thread had ended
    pass_(true);
    finals_done_ = finals_requested_;
  }
  if (inotify_fd_ >= 0) {
    if (watch_ >= 0) ::inotify_rm_watch(inotify_fd_, watch_);
    ::close(inotify_fd_);
  }
  ::close(wake_fd_);
}

void StreamWatcher::start_watching() {
  // Without an instance or a watch (the directory vanished) the interval still drives
  // passes.
  inotify_fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd_ >= 0) {
    watch_ = ::inotify_add_watch(inotify_fd_, dir_.c_str(), IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE);
  }
}

void StreamWatcher::nudge(std::chrono::milliseconds within) {
  std::lock_guard lock(mutex_);
  pass_due_ = std::min(pass_due_, Clock::now() + within);
  // A thread awake, or asleep for less, computes its wait with this due time anyway.
  if (pass_due_ >= sleeping_until_) return;
  uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
}

uint64_t StreamWatcher::request_final() {
  std::lock_guard lock(mutex_);
  uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
  return ++finals_requested_;
}

void StreamWatcher::stop_soon() {
  std::lock_guard lock(mutex_);
  stop_ = caller_finishes_ = true;
  uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
}

void StreamWatcher::finish_here() {
  stop_soon();  // if it was not: the join then waits for the thread to wake
  if (thread_.joinable()) thread_.join();
  pass_(true);
  std::lock_guard lock(mutex_);
  finals_done_ = finals_requested_;
  done_cv_.notify_all();
}

void StreamWatcher::await_final(uint64_t ticket) {
  std::unique_lock lock(mutex_);
  // Done when a final pass started after this request has ended.
  done_cv_.wait(lock, [&] { return finals_done_ >= ticket; });
}

bool StreamWatcher::final_done(uint64_t ticket) {
  std::lock_guard lock(mutex_);
  return finals_done_ >= ticket;
}

void StreamWatcher::loop() {
  const auto watch_at = Clock::now() + watch_after_;
  auto next_pass = Clock::now() + interval_;
  bool watching = false;
  for (;;) {
    if (!watching && Clock::now() >= watch_at) {
      start_watching();
      watching = true;
      next_pass = Clock::now();  // a pass now takes what came before the watch
    }
    auto until = watching ? next_pass : std::min(next_pass, Clock::now() + kEarlyPoll);
    {
      std::lock_guard lock(mutex_);
      until = sleeping_until_ = std::min(until, pass_due_);
    }
    pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {inotify_fd_, POLLIN, 0}};
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    int n =
        ::poll(fds, inotify_fd_ >= 0 ? 2 : 1, static_cast<int>(std::max<int64_t>(0, wait.count())));
    bool written = n > 0 && inotify_fd_ >= 0 && (fds[1].revents & POLLIN);
    if (written) {
      // Let a burst of writes settle, then take it in one pass; a final pass or the
      // stop cuts the wait short.
      pollfd wake{wake_fd_, POLLIN, 0};
      ::poll(&wake, 1, static_cast<int>(kSettle.count()));
      drain_fd(inotify_fd_);
    }
    written = written || (!watching && n == 0);  // before the watch, every early poll looks
    drain_fd(wake_fd_);                          // what it asked for is read below, under the lock
    uint64_t finals = 0;
    bool due = false;
    {
      std::lock_guard lock(mutex_);
      finals = finals_requested_;
      // A final pass asked for still runs, unless the caller runs the last itself.
      if (stop_ && (caller_finishes_ || finals <= finals_done_)) return;
      sleeping_until_ = Clock::time_point::min();
      if (Clock::now() >= pass_due_) {
        due = true;
        pass_due_ = Clock::time_point::max();
      }
    }
    bool final = finals > finals_done_;
    if (written || final || due || Clock::now() >= next_pass) {
      pass_(final);
      next_pass = Clock::now() + interval_;
    }
    if (final) {
      std::lock_guard lock(mutex_);
      finals_done_ = finals;
      done_cv_.notify_all();
      if (stop_ && finals_requested_ <= finals_done_) return;
    }
  }
}

}  // namespace ddprun::tracking
