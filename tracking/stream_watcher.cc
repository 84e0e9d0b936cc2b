#include "tracking/stream_watcher.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "common/error.h"

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
                             std::function<void(bool)> pass)
    : pass_(std::move(pass)), interval_(interval) {
  inotify_fd_ =
      static_cast<int>(check_syscall(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC), "inotify_init1"));
  // Without a watch (the directory vanished) the interval still drives passes.
  watch_ = ::inotify_add_watch(inotify_fd_, dir.c_str(), IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE);
  wake_fd_ = static_cast<int>(check_syscall(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), "eventfd"));
  // The thread never takes the process's signals (SIGCHLD and the stop signals are
  // the agent's loop's business).
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  thread_ = std::thread([this] { loop(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

StreamWatcher::~StreamWatcher() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
  thread_.join();
  // Removing the watch first spares the close a wait for a kernel grace period
  // (~10 ms at every exit otherwise).
  if (watch_ >= 0) ::inotify_rm_watch(inotify_fd_, watch_);
  ::close(inotify_fd_);
  ::close(wake_fd_);
}

void StreamWatcher::final_pass() {
  std::unique_lock lock(mutex_);
  uint64_t mine = ++finals_requested_;
  uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
  // Done when a final pass started after this request has ended.
  done_cv_.wait(lock, [&] { return finals_done_ >= mine; });
}

void StreamWatcher::loop() {
  auto next_pass = std::chrono::steady_clock::now() + interval_;
  for (;;) {
    pollfd fds[2] = {{inotify_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
        next_pass - std::chrono::steady_clock::now());
    int n = ::poll(fds, 2, static_cast<int>(std::max<int64_t>(0, wait.count())));
    bool written = n > 0 && (fds[0].revents & POLLIN);
    if (written) {
      // Let a burst of writes settle, then take it in one pass.
      ::poll(nullptr, 0, static_cast<int>(kSettle.count()));
      drain_fd(inotify_fd_);
    }
    if (n > 0 && (fds[1].revents & POLLIN)) drain_fd(wake_fd_);
    uint64_t finals = 0;
    {
      std::lock_guard lock(mutex_);
      if (stop_) return;
      finals = finals_requested_;
    }
    bool final = finals > finals_done_;
    if (written || final || std::chrono::steady_clock::now() >= next_pass) {
      pass_(final);
      next_pass = std::chrono::steady_clock::now() + interval_;
    }
    if (final) {
      std::lock_guard lock(mutex_);
      finals_done_ = finals;
      done_cv_.notify_all();
    }
  }
}

}  // namespace ddprun::tracking
