#include "agent/process_table.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ddprun::agent {
namespace {

struct ProcStat {
  char state = '?';
  pid_t ppid = 0;
  pid_t session = 0;
};

// Parses /proc/<pid>/stat: "pid (comm) state ppid pgrp session ...". comm may hold
// spaces and parentheses, so fields are read after the last ')'. Uses no allocation
// so the orphan guard may call it in a forked child.
bool read_stat(pid_t pid, ProcStat& out) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  char* close_paren = std::strrchr(buf, ')');
  if (close_paren == nullptr) return false;
  int ppid = 0;
  int pgrp = 0;
  int session = 0;
  if (std::sscanf(close_paren + 1, " %c %d %d %d", &out.state, &ppid, &pgrp, &session) != 4) {
    return false;
  }
  out.ppid = ppid;
  out.session = session;
  return true;
}

template <typename Pred>
std::vector<pid_t> scan(Pred pred) {
  std::vector<pid_t> found;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return found;
  while (dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    ProcStat st;
    if (read_stat(static_cast<pid_t>(pid), st) && pred(st)) {
      found.push_back(static_cast<pid_t>(pid));
    }
  }
  ::closedir(dir);
  return found;
}

}  // namespace

std::vector<pid_t> session_members(pid_t sid) {
  return scan([sid](const ProcStat& st) { return st.session == sid && st.state != 'Z'; });
}

std::vector<pid_t> children_of(pid_t parent) {
  return scan([parent](const ProcStat& st) { return st.ppid == parent && st.state != 'Z'; });
}

void kill_sessions(const std::vector<pid_t>& sids) {
  if (sids.empty()) return;
  for (int round = 0; round < 20; ++round) {
    auto victims = scan([&sids](const ProcStat& st) {
      return st.state != 'Z' && std::find(sids.begin(), sids.end(), st.session) != sids.end();
    });
    if (victims.empty()) return;
    for (pid_t pid : victims) ::kill(pid, SIGKILL);
  }
}

}  // namespace ddprun::agent
