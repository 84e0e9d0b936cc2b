#include "agent/posix_process_launcher.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <linux/mempolicy.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "os/process_table.h"

namespace ddprun::agent {
namespace {

// The child runs on a stack of its own in ddprun's memory until it execs; the
// parent is suspended meanwhile (CLONE_VFORK), so one stack serves every spawn.
constexpr size_t kChildStackSize = 256 * 1024;

struct ChildArgs {
  pid_t parent;
  const SpawnOptions* options;
  char* const* argv;
  char* const* envp;
  const cpu_set_t* cpus;           // null: keep ddprun's affinity
  const unsigned long* node_mask;  // null: keep the memory policy
};

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

char* child_stack_top() {
  static char* stack = [] {
    void* p = ::mmap(nullptr, kChildStackSize, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    return p == MAP_FAILED ? nullptr : static_cast<char*>(p);
  }();
  return stack == nullptr ? nullptr : stack + kChildStackSize;
}

// Runs in the child, in ddprun's memory, between clone and exec: only
// async-signal-safe calls, nothing allocated, nothing of the parent's written. Not
// instrumented: the sanitizers' bookkeeping would be written into the parent's memory.
__attribute__((no_sanitize("address", "undefined"))) int exec_child(void* arg) {
  const auto* a = static_cast<const ChildArgs*>(arg);
  const SpawnOptions& o = *a->options;
  ::setsid();
  // Die with ddprun; re-check the parent in case it died before prctl took effect.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != a->parent) ::_exit(137);
  // Signals stay blocked (see spawn) until the parent's handlers are gone here.
  for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (o.stdout_fd >= 0 && ::dup2(o.stdout_fd, STDOUT_FILENO) < 0) ::_exit(127);
  if (o.stderr_fd >= 0 && ::dup2(o.stderr_fd, STDERR_FILENO) < 0) ::_exit(127);
  // The worker holds 0, 1 and 2 only: no store socket, no pipe of another worker,
  // nothing ddprun itself inherited.
  ::close_range(3, ~0U, 0);
  // --numa_binding: set here, before exec, so that every thread the program starts
  // inherits it (no numactl needed). A kernel that refuses leaves the worker unbound.
  if (a->cpus != nullptr) ::sched_setaffinity(0, sizeof(cpu_set_t), a->cpus);
  if (a->node_mask != nullptr) {
    ::syscall(SYS_set_mempolicy, MPOL_PREFERRED, a->node_mask, sizeof(unsigned long) * 8 + 1);
  }
  ::execve(o.executable.c_str(), a->argv, a->envp);
  int err = errno;
  const char* why = err == ENOENT ? "': not found\n" : "': permission denied or bad format\n";
  const char* parts[] = {"ddprun: cannot execute '", o.executable.c_str(), why};
  for (const char* s : parts) {
    size_t n = std::strlen(s);
    while (n > 0) {
      ssize_t w = ::write(STDERR_FILENO, s, n);
      if (w <= 0) break;
      s += w;
      n -= static_cast<size_t>(w);
    }
  }
  ::_exit(err == ENOENT ? 127 : 126);
}

}  // namespace

PosixProcessLauncher::PosixProcessLauncher(boost::asio::io_context& io)
    : child_signals_(io, SIGCHLD) {
  wait_for_children();
}

pid_t PosixProcessLauncher::spawn(const SpawnOptions& options) {
  // Everything the child needs is prepared here: it may not allocate.
  std::vector<char*> argv = as_c_array(options.argv);
  std::vector<char*> envp = as_c_array(options.env);
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  bool bind = false;
  for (int c : options.cpus) {
    if (c >= 0 && c < CPU_SETSIZE) {
      CPU_SET(c, &cpus);
      bind = true;
    }
  }
  unsigned long node_mask = 0;
  bool prefer = options.memory_node >= 0 && options.memory_node < 64;
  if (prefer) node_mask = 1UL << options.memory_node;
  ChildArgs args{::getpid(), &options, argv.data(), envp.data(), bind ? &cpus : nullptr,
                 prefer ? &node_mask : nullptr};
  char* stack = child_stack_top();
  if (stack == nullptr)
    throw SystemError("stack for starting '" + options.executable + "'", ENOMEM);
  // A signal reaching the child before it resets its handlers would run the agent's
  // handler there, which writes to the agent's own signal pipe: the agent would think
  // it was signalled itself. So every signal is blocked until the child has execed.
  sigset_t all;
  sigset_t old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = ::clone(exec_child, stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &args);
  int clone_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid == -1) throw SystemError("clone for '" + options.executable + "'", clone_errno);
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
