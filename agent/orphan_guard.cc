#include "agent/orphan_guard.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/error.h"
#include "os/process_table.h"

namespace ddprun::agent {
namespace {

constexpr int32_t kReleased = 0;
static_assert(OrphanGuard::kBatch * sizeof(int32_t) <= PIPE_BUF, "one batch, one atomic write");

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

// What the guard is told: a session to watch (its pid), one to forget (-pid), or
// kReleased. Batches come in one write and are read in one go.
[[noreturn]] void guard_main(int read_fd) {
  detach_from_everything(read_fd);
  std::vector<pid_t> sessions;
  std::array<int32_t, OrphanGuard::kBatch> values{};
  size_t have = 0;  // bytes read into `values`
  while (true) {
    ssize_t n =
        ::read(read_fd, reinterpret_cast<char*>(values.data()) + have, sizeof(values) - have);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: ddprun is gone
    have += static_cast<size_t>(n);
    size_t whole = have / sizeof(int32_t);
    for (size_t i = 0; i < whole; ++i) {
      int32_t value = values[i];
      if (value == kReleased) ::_exit(0);
      if (value > 0) {
        sessions.push_back(static_cast<pid_t>(value));
      } else {
        std::erase(sessions, static_cast<pid_t>(-value));  // forget(): the session is over
      }
    }
    have -= whole * sizeof(int32_t);  // a value split between two reads waits for its rest
    std::memmove(values.data(), values.data() + whole, have);
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

void OrphanGuard::watch(const std::vector<pid_t>& sessions) { send(sessions, 1); }

void OrphanGuard::forget(const std::vector<pid_t>& sessions) { send(sessions, -1); }

void OrphanGuard::send(const std::vector<pid_t>& sessions, int32_t sign) {
  if (write_fd_ < 0) return;
  std::array<int32_t, OrphanGuard::kBatch> values{};
  size_t n = 0;
  auto flush = [&] {
    // Writes of up to PIPE_BUF bytes are atomic; if the guard is gone there is nothing
    // to do.
    [[maybe_unused]] ssize_t w = ::write(write_fd_, values.data(), n * sizeof(int32_t));
    n = 0;
  };
  for (pid_t session : sessions) {
    if (session <= 0) continue;
    values[n++] = sign * static_cast<int32_t>(session);
    if (n == values.size()) flush();
  }
  if (n > 0) flush();
}

void OrphanGuard::release() {
  if (write_fd_ < 0) return;
  int32_t value = kReleased;
  [[maybe_unused]] ssize_t n = ::write(write_fd_, &value, sizeof(value));
  ::close(write_fd_);
  write_fd_ = -1;
}

}  // namespace ddprun::agent
