#include "os/process_table.h"

#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "os/proc_stat.h"

namespace ddprun::os {
namespace {

template <typename Pred>
std::vector<pid_t> live_processes(Pred pred) {
  std::vector<pid_t> found;
  for_each_process([&](const ProcStat& st) {
    if (st.state != 'Z' && pred(st)) found.push_back(st.pid);
  });
  return found;
}

}  // namespace

std::vector<pid_t> children_of(pid_t parent) {
  return live_processes([parent](const ProcStat& st) { return st.ppid == parent; });
}

std::vector<pid_t> own_children() {
  std::vector<pid_t> found;
  bool listed = false;
  if (DIR* tasks = ::opendir("/proc/self/task")) {
    while (dirent* t = ::readdir(tasks)) {
      if (t->d_name[0] == '.') continue;
      char path[300];  // d_name holds at most 255 bytes
      std::snprintf(path, sizeof(path), "/proc/self/task/%s/children", t->d_name);
      FILE* f = std::fopen(path, "re");
      if (f == nullptr) continue;
      listed = true;
      int pid = 0;
      while (std::fscanf(f, "%d", &pid) == 1) {
        ProcStat st;
        if (read_proc_stat(pid, st) && st.state != 'Z') found.push_back(pid);
      }
      std::fclose(f);
    }
    ::closedir(tasks);
  }
  return listed ? found : children_of(::getpid());
}

void kill_own_children(pid_t spare) {
  // A SIGKILLed process takes a moment to die; its children come to us when it has.
  for (int round = 0; round < 1000; ++round) {
    bool killed = false;
    for (pid_t pid : own_children()) {
      if (pid == spare) continue;
      ::kill(pid, SIGKILL);
      killed = true;
    }
    if (!killed) return;
    ::sched_yield();
  }
}

void kill_sessions(const std::vector<pid_t>& sids) {
  if (sids.empty()) return;
  for (int round = 0; round < 20; ++round) {
    // A session's leader forked but not yet through setsid() still sits in the
    // caller's session: it is taken by its pid.
    auto victims = live_processes([&sids, own = ::getsid(0)](const ProcStat& st) {
      auto in = [&sids](pid_t p) { return std::find(sids.begin(), sids.end(), p) != sids.end(); };
      return in(st.session) || (st.session == own && in(st.pid));
    });
    if (victims.empty()) return;
    for (pid_t pid : victims) ::kill(pid, SIGKILL);
  }
}

}  // namespace ddprun::os
