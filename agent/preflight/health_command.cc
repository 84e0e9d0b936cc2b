#include "agent/preflight/health_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <vector>

#include "common/error.h"
#include "net/wait_scope.h"

namespace ddprun::agent {
namespace {

// What of the check's output a finding quotes.
constexpr size_t kTailLines = 5;
constexpr size_t kKeptBytes = 4096;

std::string last_lines(const std::string& out) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(line);
  }
  size_t from = lines.size() > kTailLines ? lines.size() - kTailLines : 0;
  std::string tail;
  for (size_t i = from; i < lines.size(); ++i) {
    if (!tail.empty()) tail += '\n';
    tail += lines[i];
  }
  return tail;
}

pid_t start(const std::string& command, int out_fd) {
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw SystemError("cannot start the health check", errno);
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // ddprun died before the line above
    int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, 0);
    ::dup2(out_fd, 1);
    ::dup2(out_fd, 2);
    // The signals ddprun ignores or handles are the shell's to decide again.
    ::signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // either side may come first
  return pid;
}

// The check's wait status once it exits, by `deadline` at most (nullopt: it still runs).
// Its output has ended by now, so the shell has nearly always exited already: the
// pauses only bound a check that closed its output and went on.
std::optional<int> exit_by(pid_t pid, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return std::nullopt;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    ::usleep(2000);
  }
}

// Kills the check's process group and reaps it.
void kill_and_reap(pid_t pid) {
  ::killpg(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

std::optional<Finding> run_health_command(const std::string& command,
                                          std::chrono::milliseconds timeout, int interrupt_fd) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw SystemError("cannot start the health check", errno);
  pid_t pid = 0;
  try {
    pid = start(command, fds[1]);
  } catch (...) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw;
  }
  ::close(fds[1]);
  std::string out;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timed_out = false;
  bool interrupted = false;
  int poll_error = 0;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p[2] = {{fds[0], POLLIN, 0}, {interrupt_fd, POLLIN, 0}};
    int n = ::poll(p, interrupt_fd >= 0 ? 2 : 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      poll_error = errno;
      break;
    }
    if (interrupt_fd >= 0 && (p[1].revents & POLLIN)) {
      interrupted = true;
      break;
    }
    if (p[0].revents == 0) continue;
    char buf[4096];
    ssize_t got = ::read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // every writer is gone
    out.append(buf, static_cast<size_t>(got));
    if (out.size() > 2 * kKeptBytes) out.erase(0, out.size() - kKeptBytes);
  }
  ::close(fds[0]);
  if (poll_error != 0) {
    kill_and_reap(pid);
    throw SystemError("cannot watch the health check", poll_error);
  }
  std::optional<int> status;
  if (!timed_out && !interrupted) {
    status = exit_by(pid, deadline);
    timed_out = !status;
  }
  if (status) ::killpg(pid, SIGKILL);  // what it left behind in its group
  if (!status) kill_and_reap(pid);
  if (interrupted) throw net::Interrupted("the health check was stopped by a signal");
  std::string said = last_lines(out);
  std::string problem;
  if (timed_out) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", std::chrono::duration<double>(timeout).count());
    problem = "`" + command + "` gave no verdict within " + seconds +
              " s (--health_check_timeout) and was killed";
  } else if (WIFEXITED(*status) && WEXITSTATUS(*status) == 0) {
    return std::nullopt;
  } else if (WIFEXITED(*status)) {
    problem = "`" + command + "` exited with status " + std::to_string(WEXITSTATUS(*status));
  } else {
    problem = "`" + command + "` was killed by signal " + std::to_string(WTERMSIG(*status)) +
              " (" + ::strsignal(WTERMSIG(*status)) + ")";
  }
  if (!said.empty()) problem += "; its last output:\n" + said;
  return Finding{"health_check", problem};
}

}  // namespace ddprun::agent
