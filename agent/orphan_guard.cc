#include "agent/orphan_guard.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <new>

#include "common/error.h"
#include "os/kernel_release.h"
#include "os/raw_proc.h"
#include "os/raw_syscall.h"

namespace ddprun::agent {

constexpr size_t kGuardStack = 256 * 1024;  // a few KiB used; its lowest page has no access

// All the guard writes: mapped by ddprun before the guard starts, then written by the
// guard alone (but `tid`, which the kernel keeps).
struct GuardMemory {
  char stack[kGuardStack];
  int read_fd;
  bool released;  // nothing to kill any more; the guard waits for the pipe's end
  pid_t tid;      // the guard's pid; zeroed when it exits (CLONE_CHILD_CLEARTID)
  size_t count;
  pid_t sessions[OrphanGuard::kMaxSessions];
};

namespace {

using os::raw_arg;
using os::raw_syscall;

constexpr int32_t kReleased = 0;
static_assert(OrphanGuard::kBatch * sizeof(int32_t) <= PIPE_BUF, "one batch, one atomic write");

// Everything from here to OrphanGuard's constructor runs in the guard, in ddprun's
// memory where it shares it: system calls only, no errno, no allocation, no lock (ddprun
// may have died holding one), nothing instrumented.

__attribute__((no_sanitize("address", "undefined"))) bool watched(const GuardMemory& m, long pid) {
  for (size_t i = 0; i < m.count; ++i) {
    if (m.sessions[i] == pid) return true;
  }
  return false;
}

// What ddprun sent: a session to watch (its pid), one to forget (-pid), or the release.
__attribute__((no_sanitize("address", "undefined"))) void apply(GuardMemory& m, int32_t value) {
  if (value == kReleased) {
    m.released = true;
    m.count = 0;
    return;
  }
  if (value > 0) {
    if (!m.released && m.count < OrphanGuard::kMaxSessions) m.sessions[m.count++] = value;
    return;
  }
  for (size_t i = 0; i < m.count;) {
    if (m.sessions[i] == -value) {
      m.sessions[i] = m.sessions[--m.count];
    } else {
      ++i;
    }
  }
}

// Reads ddprun's batches until its end of the pipe closes.
__attribute__((no_sanitize("address", "undefined"))) void follow(GuardMemory& m) {
  int32_t values[OrphanGuard::kBatch];
  char* bytes = reinterpret_cast<char*>(values);
  size_t have = 0;  // bytes read into `values`
  while (true) {
    long n = raw_syscall(SYS_read, m.read_fd, raw_arg(bytes + have),
                         static_cast<long>(sizeof(values) - have));
    if (n == -EINTR) continue;
    if (n <= 0) return;  // EOF: ddprun is gone
    have += static_cast<size_t>(n);
    size_t whole = have / sizeof(int32_t);
    for (size_t i = 0; i < whole; ++i) apply(m, values[i]);
    // A value split between two reads waits for its rest: three bytes at most, moved
    // one by one (a loop might become a call to memmove).
    const char* rest = bytes + whole * sizeof(int32_t);
    have -= whole * sizeof(int32_t);
    if (have > 0) bytes[0] = rest[0];
    if (have > 1) bytes[1] = rest[1];
    if (have > 2) bytes[2] = rest[2];
  }
}

// One round of kill_watched over /proc.
struct KillRound {
  const GuardMemory* memory;
  long own_session;
  bool killed;
};

__attribute__((no_sanitize("address", "undefined"))) void kill_if_watched(const os::RawProcess& p,
                                                                          void* context) {
  auto& round = *static_cast<KillRound*>(context);
  if (p.state == 'Z') return;
  const GuardMemory& m = *round.memory;
  if (watched(m, p.session) || (p.session == round.own_session && watched(m, p.pid))) {
    raw_syscall(SYS_kill, p.pid, SIGKILL);
    round.killed = true;
  }
}

// SIGKILLs every process of the watched sessions, and a watched worker that has not made
// its session yet (still in ddprun's, taken by its pid); again while any is found, as a
// dying process may still fork. Twenty rounds at most.
__attribute__((no_sanitize("address", "undefined"))) void kill_watched(const GuardMemory& m) {
  if (m.count == 0) return;
  KillRound round{&m, raw_syscall(SYS_getsid, 0), false};
  for (int i = 0; i < 20; ++i) {
    round.killed = false;
    if (!os::raw_for_each_process(kill_if_watched, &round) || !round.killed) return;
  }
}

__attribute__((no_sanitize("address", "undefined"))) int guard_main(void* memory) {
  auto& m = *static_cast<GuardMemory*>(memory);
  // Every signal blocked: none runs a handler of ddprun's, and neither a Ctrl-C nor a
  // hangup ends the guard. SIGKILL still does.
  uint64_t all = ~uint64_t{0};
  raw_syscall(SYS_rt_sigprocmask, SIG_SETMASK, raw_arg(&all), 0, static_cast<long>(sizeof(all)));
  raw_syscall(SYS_setpgid, 0, 0);  // out of ddprun's group, as a terminal's signals go there
  raw_syscall(SYS_prctl, PR_SET_NAME, raw_arg("ddprun-guard"));
  long devnull = raw_syscall(SYS_openat, AT_FDCWD, raw_arg("/dev/null"), O_RDWR);
  for (long fd = 0; fd <= 2; ++fd) {
    if (devnull >= 0 && devnull != fd) raw_syscall(SYS_dup3, devnull, fd, 0);
  }
  // Hold no pipe the user may be reading (ddprun's stdout, log pipes): close the rest.
  if (m.read_fd > 3) raw_syscall(SYS_close_range, 3, m.read_fd - 1, 0);
  raw_syscall(SYS_close_range, m.read_fd + 1, ~0U, 0);
  follow(m);
  kill_watched(m);
  raw_syscall(SYS_exit_group, 0);
  return 0;
}

}  // namespace

OrphanGuard::OrphanGuard(bool may_share_memory) {
  int fds[2];
  check_syscall(::pipe2(fds, O_CLOEXEC), "pipe for the orphan guard");
  auto fail = [&fds](const char* what, int err) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw SystemError(what, err);
  };
  // Anonymous memory is zeroed: no session yet. NORESERVE: the pages never touched (most
  // of the session list) are not charged.
  void* mapped = ::mmap(nullptr, sizeof(GuardMemory), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapped == MAP_FAILED) fail("memory for the orphan guard", errno);
  // A stack overflow faults there instead of writing the memory below the mapping.
  ::mprotect(mapped, static_cast<size_t>(::sysconf(_SC_PAGESIZE)), PROT_NONE);
  memory_ = new (mapped) GuardMemory;
  memory_->read_fd = fds[0];
  // Before 5.16 a core dump of ddprun kills every process sharing its memory: the guard
  // would die with what it guards.
  shares_memory_ = may_share_memory && os::kRawSyscalls && os::kernel_at_least(5, 16);
  if (shares_memory_) {
    // No exit signal: a "clone" child, which a wait without __WALL does not see, so that
    // a process with no other child finds out without reading /proc
    // (os::kill_own_children).
    pid_ = ::clone(guard_main, memory_->stack + kGuardStack,
                   CLONE_VM | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID, memory_, &memory_->tid,
                   nullptr, &memory_->tid);
  } else {
    pid_ = ::fork();
    if (pid_ == 0) ::_exit(guard_main(memory_));
  }
  if (pid_ == -1) {
    int err = errno;
    ::munmap(mapped, sizeof(GuardMemory));
    memory_ = nullptr;
    fail("start of the orphan guard", err);
  }
  ::close(fds[0]);
  write_fd_ = fds[1];
}

OrphanGuard::~OrphanGuard() {
  if (stays_) return;  // the kernel closes the pipe at this process's end
  if (write_fd_ >= 0) ::close(write_fd_);
  if (memory_ == nullptr) return;
  // A guard sharing this memory uses it until it exits: if it still runs, the memory
  // goes with the process.
  if (!shares_memory_ || std::atomic_ref<pid_t>(memory_->tid).load() == 0) {
    ::munmap(memory_, sizeof(GuardMemory));
  }
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
}

}  // namespace ddprun::agent
