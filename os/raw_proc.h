#pragma once

namespace ddprun::os {

/// A process as /proc/<pid>/stat lists it: what the orphan guard needs.
struct RawProcess {
  long pid = 0;
  long session = 0;
  char state = '?';  // Z: a zombie
};

/// Calls `visit(process, context)` for every process /proc lists, reading it with
/// system calls only (raw_syscall.h): for code running in another process's memory (the
/// orphan guard), where opendir and sscanf (a lock, malloc) are off limits. `visit` must
/// keep to system calls too. False when /proc cannot be opened. proc_stat.h reads the
/// same files with the C library everywhere else.
bool raw_for_each_process(void (*visit)(const RawProcess& process, void* context), void* context);

}  // namespace ddprun::os
