#include "os/proc_stat.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ddprun::os {

bool read_proc_stat(pid_t pid, ProcStat& out) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[1024];
  ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  char* close_paren = std::strrchr(buf, ')');
  if (close_paren == nullptr) return false;
  // After ')': state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
  // utime stime cutime cstime priority nice num_threads itrealvalue starttime vsize rss
  int ppid = 0;
  int session = 0;
  unsigned long long utime = 0, stime = 0;
  long long cutime = 0, cstime = 0, rss = 0;
  int fields = std::sscanf(close_paren + 1,
                           " %c %d %*d %d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld %*d %*d "
                           "%*d %*d %*u %*u %lld",
                           &out.state, &ppid, &session, &utime, &stime, &cutime, &cstime, &rss);
  if (fields < 3) return false;
  out.pid = pid;
  out.ppid = ppid;
  out.session = session;
  out.utime = utime;
  out.stime = stime;
  out.cutime = static_cast<uint64_t>(cutime < 0 ? 0 : cutime);
  out.cstime = static_cast<uint64_t>(cstime < 0 ? 0 : cstime);
  out.rss_pages = rss;
  return true;
}

void for_each_process(const std::function<void(const ProcStat&)>& visit) {
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return;
  while (dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    ProcStat st;
    if (*end == '\0' && pid > 0 && read_proc_stat(static_cast<pid_t>(pid), st)) visit(st);
  }
  ::closedir(dir);
}

}  // namespace ddprun::os
