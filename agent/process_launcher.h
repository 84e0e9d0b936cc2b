#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace ddprun::agent {

/// What to start. `stdout_fd`/`stderr_fd` become the child's fd 1/2; -1 keeps ddprun's.
struct SpawnOptions {
  std::string executable;  // resolved path, as from resolve_executable()
  std::vector<std::string> argv;
  std::vector<std::string> env;
  int stdout_fd = -1;
  int stderr_fd = -1;
};

/// Starts and signals worker processes. The agent loop uses it through this
/// interface so the OS specifics stay in one place.
class ProcessLauncher {
 public:
  virtual ~ProcessLauncher() = default;

  /// Starts a process in a new session (its pid is its process-group and session id),
  /// killed by the kernel if ddprun dies, with default signal dispositions and an
  /// empty signal mask. Never blocks on the child. If exec fails the child prints the
  /// reason and exits 127 (not found) or 126 (not executable). Throws SystemError
  /// when fork fails.
  virtual pid_t spawn(const SpawnOptions& options) = 0;

  /// Sends `sig` to the process group `pgid`; a group that no longer exists is fine.
  virtual void signal_group(pid_t pgid, int sig) = 0;
};

/// fork/exec on Linux.
class PosixProcessLauncher : public ProcessLauncher {
 public:
  pid_t spawn(const SpawnOptions& options) override;
  void signal_group(pid_t pgid, int sig) override;
};

}  // namespace ddprun::agent
