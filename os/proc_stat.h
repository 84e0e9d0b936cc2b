#pragma once

#include <sys/types.h>

#include <cstdint>

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
/// after the last ')'. Allocates nothing: the orphan guard calls it in a forked child.
/// False when the process is gone or the line is not understood.
bool read_proc_stat(pid_t pid, ProcStat& out);

/// Calls `visit(stat)` for every process /proc lists (nothing when /proc is missing).
/// Allocates nothing but the directory stream.
template <typename Visit>
void for_each_process(Visit visit);

namespace detail {
void* open_proc();
/// The next pid in the listing, 0 at the end (and closes it).
pid_t next_pid(void* dir);
}  // namespace detail

template <typename Visit>
void for_each_process(Visit visit) {
  void* dir = detail::open_proc();
  if (dir == nullptr) return;
  while (pid_t pid = detail::next_pid(dir)) {
    ProcStat st;
    if (read_proc_stat(pid, st)) visit(st);
  }
}

}  // namespace ddprun::os
