#pragma once

#include <string>

#include "agent/hang/hang_monitor.h"

namespace ddprun::agent {

/// The page a worker reports its progress on: a small file (DDPRUN_PROGRESS_FILE)
/// that the worker's tracking client maps and writes, and the agent maps and reads, so
/// neither side makes a system call per report. Layout, little-endian, 256 bytes (a
/// client maps the first 128 alone where the file is shorter, as ddprun before goodput
/// accounting made it, and then writes no field beyond):
///
///   0  char[8]   magic "DDPRPG01"
///   8  uint64    beats: +1 at every progress call (log, config, summary, heartbeat,
///                entering or leaving a section)
///  16  int64     the last logged step (INT64_MIN: none yet)
///  24  uint64    section timeout in ms: 0 outside a section, UINT64_MAX for a section
///                without a limit
///  32  char[64]  the section's name, NUL-terminated
///  96  uint64    steps timed (straggler detection), written last of the three
/// 104  uint64    their total time in ns
/// 112  uint64    of it, the rank's own work in ns (not waiting for the other ranks)
/// 120  uint8     who marks the steps: 0 nobody yet, 1 ddprun's hook in the worker
///                (sitecustomize: optimizer steps), 2 the program (ddprun_tracking.step())
/// 128  int64     the first timed step's end, wall clock in us since the epoch (0: none)
/// 136  int64     the last timed step's end, likewise
/// 144  int64     the last checkpoint the program declared durable
///                (ddprun_tracking.checkpoint()), likewise (0: none)
/// 152  int64     that checkpoint's step (INT64_MIN: not given)
///
/// Fields are written without locks; a torn read costs at most one look.
class ProgressPage {
 public:
  static constexpr size_t kSize = 256;

  /// Creates (or resets) the file at `path` and maps it. Throws SystemError naming it.
  explicit ProgressPage(std::string path);
  ~ProgressPage();
  ProgressPage(const ProgressPage&) = delete;
  ProgressPage& operator=(const ProgressPage&) = delete;

  const std::string& path() const { return path_; }
  /// The worker's counters and section now (`output` is left 0).
  ProgressSample read() const;

 private:
  std::string path_;
  unsigned char* map_ = nullptr;
};

}  // namespace ddprun::agent
