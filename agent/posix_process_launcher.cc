#include "agent/posix_process_launcher.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/mempolicy.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <utility>

#include <boost/asio/post.hpp>

#include "common/descriptor_ready.h"
#include "common/error.h"
#include "os/process_table.h"
#include "os/raw_syscall.h"

namespace ddprun::agent {
namespace {

constexpr size_t kChildStackSize = 64 * 1024;
// Concurrent starts need a child that writes nothing of the parent's, errno included.
constexpr int kCloneFlags = CLONE_VM | SIGCHLD | (os::kRawSyscalls ? 0 : CLONE_VFORK);

// The kernel's rt_sigaction argument (x86-64 and arm64 share this layout).
struct KernelSigaction {
  void (*handler)(int);
  unsigned long flags;
  void (*restorer)();
  uint64_t mask;
};

using os::raw_arg;
using os::raw_syscall;

std::vector<char*> as_c_array(const std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

int exitcode_of(int status) {
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

// What is not the default now (handlers, and ignored signals, which exec keeps): what
// a child resets before it may take a signal.
std::vector<int> non_default_signals() {
  std::vector<int> out;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    bool is_default = true;
    if constexpr (os::kRawSyscalls) {
      KernelSigaction old{};
      is_default = raw_syscall(SYS_rt_sigaction, sig, 0, raw_arg(&old), sizeof(old.mask)) != 0 ||
                   old.handler == SIG_DFL;
    } else {
      struct sigaction old {};
      is_default = ::sigaction(sig, nullptr, &old) != 0 || old.sa_handler == SIG_DFL;
    }
    if (!is_default) out.push_back(sig);
  }
  return out;
}

}  // namespace

// Everything one child reads between clone and exec, owned here until then.
struct PosixProcessLauncher::Launch {
  Launch(SpawnOptions o, const std::vector<int>& reset, int done)
      : options(std::move(o)),
        argv(as_c_array(options.argv)),
        envp(as_c_array(options.env)),
        parent(::getpid()),
        signals_to_reset(reset.data()),
        signal_count(reset.size()),
        done_fd(done),
        stack(static_cast<char*>(::mmap(nullptr, kChildStackSize, PROT_READ | PROT_WRITE,
                                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0))) {
    if (stack == MAP_FAILED) {
      throw SystemError("stack for starting '" + options.executable + "'", errno);
    }
    CPU_ZERO(&cpus);
    for (int c : options.cpus) {
      if (c >= 0 && c < CPU_SETSIZE) {
        CPU_SET(c, &cpus);
        bind = true;
      }
    }
    prefer = options.memory_node >= 0 && options.memory_node < 64;
    if (prefer) node_mask = 1UL << options.memory_node;
  }
  ~Launch() { ::munmap(stack, kChildStackSize); }
  Launch(const Launch&) = delete;
  Launch& operator=(const Launch&) = delete;

  SpawnOptions options;
  std::vector<char*> argv;
  std::vector<char*> envp;
  pid_t parent;
  const int* signals_to_reset;
  size_t signal_count;
  int done_fd;  // the batch's pipe: closed by the exec
  cpu_set_t cpus{};
  bool bind = false;
  unsigned long node_mask = 0;
  bool prefer = false;
  char* stack;  // the child's, until its exec
};

namespace {

// Runs in the child, in ddprun's memory, between clone and exec: system calls only,
// nothing allocated, nothing of the parent's written (not even errno: ddprun goes on
// running meanwhile). Not instrumented: the sanitizers' bookkeeping would be written
// into the parent's memory.
__attribute__((no_sanitize("address", "undefined"))) int exec_child(void* arg_ptr) {
  const auto* l = static_cast<const PosixProcessLauncher::Launch*>(arg_ptr);
  raw_syscall(SYS_setsid);
  // Die with ddprun; re-check the parent in case it died before prctl took effect.
  raw_syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL);
  if (raw_syscall(SYS_getppid) != l->parent) raw_syscall(SYS_exit_group, 137);
  // Signals stay blocked (see spawn) until the parent's handlers are gone here.
  for (size_t i = 0; i < l->signal_count; ++i) {
    if constexpr (os::kRawSyscalls) {
      KernelSigaction dfl{};
      raw_syscall(SYS_rt_sigaction, l->signals_to_reset[i], raw_arg(&dfl), 0, sizeof(dfl.mask));
    } else {
      ::signal(l->signals_to_reset[i], SIG_DFL);
    }
  }
  if constexpr (os::kRawSyscalls) {
    uint64_t none = 0;
    raw_syscall(SYS_rt_sigprocmask, SIG_SETMASK, raw_arg(&none), 0, sizeof(none));
  } else {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
  }
  const SpawnOptions& o = l->options;
  for (auto [from, to] : {std::pair{o.stdout_fd, STDOUT_FILENO}, {o.stderr_fd, STDERR_FILENO}}) {
    if (from >= 0 && from != to && raw_syscall(SYS_dup3, from, to, 0) < 0)
      raw_syscall(SYS_exit_group, 127);
  }
  // The worker holds 0, 1 and 2 only: no store socket, no pipe of another worker,
  // nothing ddprun itself inherited. The rest closes at exec, the batch's pipe with
  // it (a kernel before 5.11 closes all but that pipe now).
  if (raw_syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) < 0) {
    if (l->done_fd > 3) raw_syscall(SYS_close_range, 3, l->done_fd - 1, 0);
    raw_syscall(SYS_close_range, l->done_fd + 1, ~0U, 0);
  }
  // --numa_binding: set here, before exec, so that every thread the program starts
  // inherits it (no numactl needed). A kernel that refuses leaves the worker unbound.
  if (l->bind) raw_syscall(SYS_sched_setaffinity, 0, sizeof(cpu_set_t), raw_arg(&l->cpus));
  if (l->prefer) {
    raw_syscall(SYS_set_mempolicy, MPOL_PREFERRED, raw_arg(&l->node_mask),
                sizeof(unsigned long) * 8 + 1);
  }
  long err = -raw_syscall(SYS_execve, raw_arg(o.executable.c_str()), raw_arg(l->argv.data()),
                          raw_arg(l->envp.data()));
  const char* why = err == ENOENT ? "': not found\n" : "': permission denied or bad format\n";
  const char* parts[] = {"ddprun: cannot execute '", o.executable.c_str(), why};
  for (const char* s : parts) {
    size_t n = 0;
    while (s[n] != '\0') ++n;
    while (n > 0) {
      long w = raw_syscall(SYS_write, STDERR_FILENO, raw_arg(s), static_cast<long>(n));
      if (w <= 0) break;
      s += w;
      n -= static_cast<size_t>(w);
    }
  }
  raw_syscall(SYS_exit_group, err == ENOENT ? 127 : 126);
  return 0;
}

// Whether the pipe `fd` reads end of file before `deadline` (signals, such as the
// children's SIGCHLD, interrupt the wait but do not end it).
bool ended(int fd, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, left.count())));
    if (n < 0 && errno == EINTR) continue;
    if (n != 1) return false;
    char byte;
    ssize_t r = ::read(fd, &byte, 1);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    return r == 0;
  }
}

}  // namespace

PosixProcessLauncher::PosixProcessLauncher(boost::asio::io_context& io)
    : io_(io), child_signals_(io, SIGCHLD) {
  wait_for_children();
}

PosixProcessLauncher::~PosixProcessLauncher() {
  if (open_) seal_batch();
  // A child still before its exec reads what its batch holds: wait for the exec (a
  // few microseconds), and keep the memory of one that never gets there (stopped).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (auto& batch : sealed_) {
    if (!ended(batch->done->native_handle(), deadline)) {
      for (auto& l : batch->launches) (void)l.release();  // NOLINT(bugprone-unused-return-value)
    }
  }
}

PosixProcessLauncher::Batch::~Batch() {
  if (write_fd >= 0) ::close(write_fd);
  if (read_fd >= 0) ::close(read_fd);
}

size_t PosixProcessLauncher::starting() const {
  size_t n = open_ ? open_->launches.size() : 0;
  for (const auto& batch : sealed_) n += batch->launches.size();
  return n;
}

PosixProcessLauncher::Batch& PosixProcessLauncher::open_batch() {
  if (open_) return *open_;
  auto batch = std::make_unique<Batch>();
  int fds[2];
  check_syscall(::pipe2(fds, O_CLOEXEC), "pipe for starting workers");
  batch->read_fd = fds[0];
  batch->write_fd = fds[1];
  if (batch->write_fd < 3) {  // 0-2 were closed: the children's stdio must not take it
    int moved = static_cast<int>(
        check_syscall(::fcntl(batch->write_fd, F_DUPFD_CLOEXEC, 3), "pipe for starting workers"));
    ::close(batch->write_fd);
    batch->write_fd = moved;
  }
  batch->signals_to_reset = non_default_signals();
  open_ = std::move(batch);
  boost::asio::post(io_, [this, alive = std::weak_ptr<bool>(alive_)] {
    if (!alive.expired()) seal_batch();
  });
  return *open_;
}

// The loop runs again: the batch is whole. Its memory goes once its pipe reads end of
// file, when every child has execed or died.
void PosixProcessLauncher::seal_batch() {
  if (!open_) return;
  std::unique_ptr<Batch> batch = std::move(open_);
  ::close(batch->write_fd);
  batch->write_fd = -1;
  batch->done = std::make_unique<boost::asio::posix::stream_descriptor>(io_, batch->read_fd);
  batch->read_fd = -1;
  Batch* b = batch.get();
  sealed_.push_back(std::move(batch));
  when_ready(*b->done, boost::asio::posix::descriptor_base::wait_read,
             [this, b, alive = std::weak_ptr<bool>(alive_)](const boost::system::error_code& ec) {
               if (alive.expired() || ec == boost::asio::error::operation_aborted) return;
               sealed_.remove_if([b](const auto& batch) { return batch.get() == b; });
             });
}

pid_t PosixProcessLauncher::spawn(SpawnOptions options) {
  Batch& batch = open_batch();
  // Everything the child needs is prepared here: it may not allocate.
  auto launch =
      std::make_unique<Launch>(std::move(options), batch.signals_to_reset, batch.write_fd);
  // A signal reaching the child before it resets its handlers would run the agent's
  // handler there, which writes to the agent's own signal pipe: the agent would think
  // it was signalled itself. So every signal is blocked until the child has execed.
  sigset_t all;
  sigset_t old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = ::clone(exec_child, launch->stack + kChildStackSize, kCloneFlags, launch.get());
  int clone_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid == -1) throw SystemError("clone for '" + launch->options.executable + "'", clone_errno);
  batch.launches.push_back(std::move(launch));
  children_.insert(pid);
  return pid;
}

void PosixProcessLauncher::signal_group(pid_t pgid, int sig) {
  if (pgid <= 0) return;
  // Until the child has run setsid() its group does not exist yet; signal it directly.
  if (::killpg(pgid, sig) == -1 && errno == ESRCH) ::kill(pgid, sig);
}

void PosixProcessLauncher::signal_process(pid_t pid, int sig) {
  if (pid > 0) ::kill(pid, sig);
}

// ddprun is a child subreaper (LocalAgent::run): once a worker has exited, everything
// it started that still lives has become ddprun's child, its session's members
// included. So ddprun's own children are the leftovers: a few reads of its children
// lists, not a scan of every process on the machine after every attempt.
void PosixProcessLauncher::kill_leftovers(pid_t spare) { os::kill_own_children(spare); }

void PosixProcessLauncher::wait_for_children() {
  child_signals_.async_wait([this](const boost::system::error_code& ec, int) {
    if (ec) return;
    reap_children();
    wait_for_children();
  });
}

// One SIGCHLD may stand for many exits: reap them all, then report them together.
void PosixProcessLauncher::reap_children() {
  std::vector<ChildExit> exits;
  int status = 0;
  pid_t pid = 0;
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
    if (children_.erase(pid) == 0) continue;  // an orphaned grandchild or the guard
    exits.push_back({pid, exitcode_of(status)});
  }
  if (!exits.empty() && on_exit_) on_exit_(exits);
}

}  // namespace ddprun::agent
