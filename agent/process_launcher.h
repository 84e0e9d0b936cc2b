#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

namespace ddprun::agent {

/// What to start. `stdout_fd`/`stderr_fd` become the child's fd 1/2; -1 keeps ddprun's.
/// The child gets descriptors 0, 1 and 2 and nothing else.
struct SpawnOptions {
  std::string executable;  // resolved path, as from resolve_executable()
  std::vector<std::string> argv;
  std::vector<std::string> env;
  int stdout_fd = -1;
  int stderr_fd = -1;
  std::vector<int> cpus;  // the CPUs it may run on (set before exec); empty: ddprun's
  int memory_node = -1;   // memory preferred from this NUMA node; -1: the kernel's choice
};

/// One child that ended. `exitcode` follows torchrun: the exit status, or minus the
/// signal number for a death by signal.
struct ChildExit {
  pid_t pid = -1;
  int exitcode = 0;
};

/// Owns the agent's child processes end to end: starts them, signals them, tells the
/// agent's loop when they exit, and kills what they leave behind. The agent reaches
/// processes only through this interface, so a fake can stand in for the OS in tests.
/// Single-threaded: every method and callback on the agent's loop thread.
class ProcessLauncher {
 public:
  /// Receives every exit noticed at one wake-up together (several workers that
  /// failed at the same moment are judged together). Only children this launcher
  /// spawned are reported; other children (orphans re-parented to ddprun) are reaped
  /// silently.
  using ExitHandler = std::function<void(const std::vector<ChildExit>&)>;

  virtual ~ProcessLauncher() = default;

  /// Where exits go from now on (one handler; a later call replaces it).
  virtual void on_exit(ExitHandler handler) = 0;

  /// Starts a process in a new session (its pid is its process-group and session id),
  /// killed by the kernel if ddprun dies, with default signal dispositions, an empty
  /// signal mask and only descriptors 0, 1 and 2. Never blocks on the child. If exec
  /// fails the child prints the reason and exits 127 (not found) or 126 (not
  /// executable). Throws SystemError when the process cannot be created.
  virtual pid_t spawn(SpawnOptions options) = 0;

  /// Sends `sig` to the process group `pgid`; a group that no longer exists is fine.
  virtual void signal_group(pid_t pgid, int sig) = 0;
  /// Sends `sig` to one process (the worker watchdog's target); a process that no
  /// longer exists is fine.
  virtual void signal_process(pid_t pid, int sig) = 0;

  /// Once every worker has exited: SIGKILLs whatever they left alive (their sessions'
  /// members, daemons they started), sparing `spare` (the orphan guard).
  virtual void kill_leftovers(pid_t spare) = 0;
};

}  // namespace ddprun::agent
