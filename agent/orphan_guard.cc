#include "agent/orphan_guard.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/error.h"
#include "os/process_table.h"

namespace ddprun::agent {
namespace {

constexpr int32_t kReleased = 0;

void detach_from_everything(int keep_fd) {
  ::setpgid(0, 0);  // out of ddprun's group: a Ctrl-C on the terminal does not reach us
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) ::signal(sig, SIG_IGN);
  ::prctl(PR_SET_NAME, "ddprun-guard");
  int devnull = ::open("/dev/null", O_RDWR);
  for (int fd = 0; fd <= 2; ++fd) ::dup2(devnull, fd);
  // Hold no pipe the user may be reading (ddprun's stdout, log pipes): close the rest
  // (two calls, not one per possible descriptor).
  if (keep_fd > 3) ::close_range(3, static_cast<unsigned>(keep_fd) - 1, 0);
  ::close_range(static_cast<unsigned>(keep_fd) + 1, ~0U, 0);
}

[[noreturn]] void guard_main(int read_fd) {
  detach_from_everything(read_fd);
  std::vector<pid_t> sessions;
  int32_t value = 0;
  while (true) {
    ssize_t n = ::read(read_fd, &value, sizeof(value));
    if (n == static_cast<ssize_t>(sizeof(value))) {
      if (value == kReleased) ::_exit(0);
      if (value > 0) {
        sessions.push_back(static_cast<pid_t>(value));
      } else {
        std::erase(sessions, static_cast<pid_t>(-value));  // forget(): the session is over
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;  // EOF: ddprun is gone
  }
  os::kill_sessions(sessions);
  ::_exit(0);
}

}  // namespace

OrphanGuard::OrphanGuard() {
  int fds[2];
  check_syscall(::pipe2(fds, O_CLOEXEC), "pipe for the orphan guard");
  pid_ = ::fork();
  if (pid_ == -1) {
    int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw SystemError("fork of the orphan guard", err);
  }
  if (pid_ == 0) {
    ::close(fds[1]);
    guard_main(fds[0]);
  }
  ::close(fds[0]);
  write_fd_ = fds[1];
}

OrphanGuard::~OrphanGuard() {
  if (write_fd_ >= 0) ::close(write_fd_);
}

void OrphanGuard::watch(pid_t session) {
  if (write_fd_ < 0) return;
  int32_t value = static_cast<int32_t>(session);
  // A 4-byte write to a pipe is atomic; if the guard is gone there is nothing to do.
  [[maybe_unused]] ssize_t n = ::write(write_fd_, &value, sizeof(value));
}

void OrphanGuard::forget(pid_t session) {
  if (write_fd_ < 0 || session <= 0) return;
  int32_t value = -static_cast<int32_t>(session);
  [[maybe_unused]] ssize_t n = ::write(write_fd_, &value, sizeof(value));
}

void OrphanGuard::release() {
  if (write_fd_ < 0) return;
  int32_t value = kReleased;
  [[maybe_unused]] ssize_t n = ::write(write_fd_, &value, sizeof(value));
  ::close(write_fd_);
  write_fd_ = -1;
}

}  // namespace ddprun::agent
