#include "os/raw_proc.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>

#include <cstddef>

#include "os/raw_syscall.h"

namespace ddprun::os {
namespace {

// Parses a decimal number at text[at], moving `at` past it. False if there is none.
__attribute__((no_sanitize("address", "undefined"))) bool number(const char* text, long size,
                                                                 long& at, long& out) {
  long start = at;
  out = 0;
  while (at < size && text[at] >= '0' && text[at] <= '9') out = out * 10 + (text[at++] - '0');
  return at > start;
}

// Process `name` (a /proc entry) from its stat file. False for an entry that is not a
// process, or one gone meanwhile.
__attribute__((no_sanitize("address", "undefined"))) bool read_stat(long proc, const char* name,
                                                                    RawProcess& out) {
  char path[32];
  long length = 0;
  out.pid = 0;
  for (; name[length] != '\0'; ++length) {
    if (name[length] < '0' || name[length] > '9' || length > 16) return false;
    path[length] = name[length];
    out.pid = out.pid * 10 + (name[length] - '0');
  }
  if (length == 0) return false;
  const char suffix[] = "/stat";
  for (size_t i = 0; i < sizeof(suffix); ++i) path[length + static_cast<long>(i)] = suffix[i];
  long fd = raw_syscall(SYS_openat, proc, raw_arg(path), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char text[256];
  long size = raw_syscall(SYS_read, fd, raw_arg(text), static_cast<long>(sizeof(text)));
  raw_syscall(SYS_close, fd);
  // "pid (name) state ppid pgrp session ...": the name may hold anything, a ')' too,
  // but is 15 bytes at most, so the last ')' read ends it.
  long paren = -1;
  for (long i = 0; i < size; ++i) {
    if (text[i] == ')') paren = i;
  }
  if (paren < 0 || paren + 3 >= size) return false;
  out.state = text[paren + 2];
  long at = paren + 3;
  long field = 0;
  for (int i = 0; i < 3; ++i) {  // ppid, pgrp, session
    if (at >= size || text[at++] != ' ' || !number(text, size, at, field)) return false;
  }
  out.session = field;
  return true;
}

}  // namespace

__attribute__((no_sanitize("address", "undefined"))) bool raw_for_each_process(
    void (*visit)(const RawProcess& process, void* context), void* context) {
  long proc =
      raw_syscall(SYS_openat, AT_FDCWD, raw_arg("/proc"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (proc < 0) return false;
  alignas(dirent64) char entries[4096];
  long n = 0;
  while ((n = raw_syscall(SYS_getdents64, proc, raw_arg(entries),
                          static_cast<long>(sizeof(entries)))) > 0) {
    for (long at = 0; at < n;) {
      const auto* entry = reinterpret_cast<const dirent64*>(entries + at);
      at += entry->d_reclen;
      RawProcess process;
      if (read_stat(proc, entry->d_name, process)) visit(process, context);
    }
  }
  raw_syscall(SYS_close, proc);
  return true;
}

}  // namespace ddprun::os
