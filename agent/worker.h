#pragma once

#include <sys/types.h>

#include <chrono>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

namespace ddprun::agent {

/// A worker's life, as torchrun names it. Transitions:
///   kInit -> kHealthy (spawned) -> kSucceeded (exit 0) | kFailed (non-zero exit or
///   signal while the group was running) | kStopped (exited after ddprun stopped it).
enum class WorkerState { kInit, kHealthy, kSucceeded, kFailed, kStopped };

/// How a worker process ended. `exitcode` follows torchrun: the exit status, or
/// minus the signal number for a signal death.
struct WorkerExit {
  int exitcode = 0;
  std::time_t wall_time = 0;
};

/// One worker process of this node.
struct Worker {
  int local_rank = 0;
  int global_rank = 0;
  int role_rank = 0;
  int world_size = 1;
  int role_world_size = 1;
  pid_t pid = -1;
  WorkerState state = WorkerState::kInit;
  std::optional<WorkerExit> exit;
  std::string error_file;
  std::string reaped_by;  // why the worker watchdog signalled it; "" when it did not
  // Where its NCCL flight recorder takes dump requests and writes dumps ("" when hang
  // detection, which asks for them, is off).
  std::string flight_recorder_pipe;
  std::string flight_recorder_dump;
};

/// This node's workers for one attempt, with what the rendezvous decided.
struct WorkerGroup {
  int group_rank = 0;
  int group_world_size = 1;
  std::string master_addr;
  int master_port = 0;
  bool use_agent_store = false;
  int restart_count = 0;
  std::vector<Worker> workers;
};

/// The shell-style exit code ddprun reports for a worker: its status, or 128+N for
/// a death by signal N.
inline int shell_exit_code(int exitcode) { return exitcode < 0 ? 128 - exitcode : exitcode; }

}  // namespace ddprun::agent
