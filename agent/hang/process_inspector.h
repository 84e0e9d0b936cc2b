#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "agent/hang/flight_recorder.h"

namespace ddprun::agent {

/// One look at a process from outside.
struct ProcessLook {
  bool alive = false;
  char state = '?';                  // R, S, D (uninterruptible sleep), Z, T, ...
  std::chrono::milliseconds cpu{0};  // user + system time so far
  std::string wait_channel;          // where the kernel has it waiting, when in D, T or t
};

/// Whose stacks to capture, and where a Python worker's dump arrives.
struct StackRequest {
  pid_t pid = -1;
  std::string python_dump_file;         // DDPRUN_STACK_FILE of the worker ("" = not Python)
  std::string native_out;               // where to put the native stack tool's output
  FlightRecorderFiles flight_recorder;  // where to ask for its NCCL dump ("": don't)
};

struct CapturedStacks {
  std::string python;          // faulthandler's dump of every thread
  std::string native;          // every thread's native stack
  std::string note;            // why one is missing
  FlightRecord flight_record;  // its NCCL flight recorder's dump, when it has one
};

/// Looks into the agent's workers for hang detection: their state and CPU time, and
/// their stacks. Production reads /proc and runs eu-stack or gdb; tests script it.
/// Single-threaded: the agent's loop thread.
class ProcessInspector {
 public:
  using OnStacks = std::function<void(std::vector<CapturedStacks>)>;

  virtual ~ProcessInspector() = default;

  virtual ProcessLook look(pid_t pid) = 0;

  /// Captures every requested process's stacks and NCCL flight record (one result per
  /// request, in order) and calls `done` on the loop; never takes longer than a
  /// bounded time.
  virtual void capture(std::vector<StackRequest> requests, OnStacks done) = 0;
};

}  // namespace ddprun::agent
