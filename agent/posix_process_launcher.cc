#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agent/process_launcher.h"
#include "common/error.h"

namespace ddprun::agent {
namespace {

std::vector<char*> as_c_array(const std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

void write_all(int fd, const char* s) {
  size_t n = std::strlen(s);
  while (n > 0) {
    ssize_t w = ::write(fd, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

// Runs in the child between fork and exec: only async-signal-safe calls.
[[noreturn]] void exec_child(pid_t parent, const SpawnOptions& o, char* const* argv,
                             char* const* envp) {
  ::setsid();
  // Die with ddprun; re-check the parent in case it died before prctl took effect.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(137);
  // Signals stay blocked (see spawn) until the parent's handlers are gone.
  for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (o.stdout_fd >= 0 && ::dup2(o.stdout_fd, STDOUT_FILENO) < 0) ::_exit(127);
  if (o.stderr_fd >= 0 && ::dup2(o.stderr_fd, STDERR_FILENO) < 0) ::_exit(127);
  ::execve(o.executable.c_str(), argv, envp);
  int err = errno;
  write_all(STDERR_FILENO, "ddprun: cannot execute '");
  write_all(STDERR_FILENO, o.executable.c_str());
  write_all(STDERR_FILENO,
            err == ENOENT ? "': not found\n" : "': permission denied or bad format\n");
  ::_exit(err == ENOENT ? 127 : 126);
}

}  // namespace

pid_t PosixProcessLauncher::spawn(const SpawnOptions& options) {
  // Everything the child needs is prepared before fork: it may not allocate.
  std::vector<char*> argv = as_c_array(options.argv);
  std::vector<char*> envp = as_c_array(options.env);
  pid_t parent = ::getpid();
  // A signal reaching the child before it resets its handlers would run the agent's
  // handler there, which writes to the agent's own signal pipe: the agent would think
  // it was signalled itself. So every signal is blocked across fork.
  sigset_t all;
  sigset_t old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = ::fork();
  int fork_errno = errno;
  if (pid == 0) exec_child(parent, options, argv.data(), envp.data());
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid == -1) throw SystemError("fork for '" + options.executable + "'", fork_errno);
  return pid;
}

void PosixProcessLauncher::signal_group(pid_t pgid, int sig) {
  if (pgid <= 0) return;
  // Until the child has run setsid() its group does not exist yet; signal it directly.
  if (::killpg(pgid, sig) == -1 && errno == ESRCH) ::kill(pgid, sig);
}

}  // namespace ddprun::agent
