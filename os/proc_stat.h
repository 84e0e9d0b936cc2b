#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>

namespace ddprun::os {

/// The fields of /proc/<pid>/stat ddprun reads.
struct ProcStat {
  pid_t pid = 0;
  char state = '?';  // R, S, D (uninterruptible), Z (zombie), T, ...
  pid_t ppid = 0;
  pid_t session = 0;
  /// CPU time in clock ticks: its own, and its reaped children's.
  uint64_t utime = 0, stime = 0, cutime = 0, cstime = 0;
  int64_t rss_pages = 0;
};

/// Reads /proc/<pid>/stat. comm may hold spaces and parentheses, so fields are read
/// after the last ')'. False when the process is gone or the line is not understood.
/// (raw_proc.h reads it with system calls only, for the orphan guard.)
bool read_proc_stat(pid_t pid, ProcStat& out);

/// Calls `visit(stat)` for every process /proc lists (nothing when /proc is missing).
void for_each_process(const std::function<void(const ProcStat&)>& visit);

}  // namespace ddprun::os
