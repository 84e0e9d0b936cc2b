#include "agent/preflight/health_command.h"

#include <fcntl.h>
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
#include "common/loop_waits.h"

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

// Starts the check in a process group of its own: a watcher (a fork of ddprun), whose
// child runs `command` writing to `out_fd`; the watcher reaps it and writes its wait
// status to `status_fd`. So the verdict does not depend on ddprun reaping the check
// (the process launcher reaps every child of ddprun it sees exit). Both die with
// ddprun. Returns the watcher's pid, the group's id.
pid_t start(const std::string& command, int out_fd, int status_fd) {
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw SystemError("cannot start the health check", errno);
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // ddprun died before the line above
    pid_t watcher = ::getpid();
    pid_t check = ::fork();
    if (check < 0) ::_exit(127);
    if (check == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != watcher) ::_exit(127);
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
    ::close(out_fd);  // the check's output ends when the check's writers do
    int status = 0;
    while (::waitpid(check, &status, 0) < 0 && errno == EINTR) {
    }
    (void)!::write(status_fd, &status, sizeof status);
    ::_exit(0);
  }
  ::setpgid(pid, pid);  // either side may come first
  return pid;
}

// Kills the check's process group and reaps it.
void kill_and_reap(pid_t pid) {
  ::killpg(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

// What the check says and how it ended.
struct Outcome {
  std::string out;            // its last output
  std::optional<int> status;  // its wait status; nullopt: no verdict in time
};

// Reads the check's output (on `out_fd`) until it ends, then its wait status (on
// `status_fd`), by `deadline`.
Task<Outcome> watch(int out_fd, int status_fd, std::chrono::steady_clock::time_point deadline,
                    CancelSignal& cancel) {
  Outcome o;
  for (;;) {
    if (!co_await wait_readable(out_fd, deadline, cancel)) co_return o;
    char buf[4096];
    ssize_t got = ::read(out_fd, buf, sizeof buf);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got < 0) throw SystemError("cannot read the health check's output", errno);
    if (got == 0) break;  // every writer is gone
    o.out.append(buf, static_cast<size_t>(got));
    if (o.out.size() > 2 * kKeptBytes) o.out.erase(0, o.out.size() - kKeptBytes);
  }
  // The output has ended, so the check nearly always has too: this bounds one that
  // closed its output and went on.
  if (!co_await wait_readable(status_fd, deadline, cancel)) co_return o;
  int status = 0;
  if (::read(status_fd, &status, sizeof status) == static_cast<ssize_t>(sizeof status)) {
    o.status = status;
  }
  co_return o;
}

// The finding of a check that ended as `o` says (nullopt: it passed).
std::optional<Finding> verdict(const std::string& command, std::chrono::milliseconds timeout,
                               const Outcome& o) {
  bool timed_out = !o.status;
  const std::optional<int>& status = o.status;
  std::string said = last_lines(o.out);
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

}  // namespace

Task<std::optional<Finding>> run_health_command(std::string command,
                                                std::chrono::milliseconds timeout,
                                                CancelSignal& cancel) {
  int out[2];
  int status[2];
  if (::pipe2(out, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw SystemError("cannot start the health check", errno);
  }
  if (::pipe2(status, O_CLOEXEC | O_NONBLOCK) != 0) {
    int err = errno;
    ::close(out[0]);
    ::close(out[1]);
    throw SystemError("cannot start the health check", err);
  }
  auto close_all = [&out, &status] {
    for (int* fd : {&out[0], &out[1], &status[0], &status[1]}) {
      if (*fd >= 0) ::close(*fd);
      *fd = -1;
    }
  };
  pid_t group = 0;
  try {
    group = start(command, out[1], status[1]);
  } catch (...) {
    close_all();
    throw;
  }
  ::close(out[1]);
  ::close(status[1]);
  out[1] = status[1] = -1;
  Outcome o;
  try {
    o = co_await watch(out[0], status[0], std::chrono::steady_clock::now() + timeout, cancel);
  } catch (...) {
    close_all();
    kill_and_reap(group);  // a stop signal, or its output could not be read
    throw;
  }
  close_all();
  kill_and_reap(group);  // the watcher, and what the check left behind in its group
  co_return verdict(command, timeout, o);
}

}  // namespace ddprun::agent
