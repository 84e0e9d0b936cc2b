#include "os/process_table.h"

#include <signal.h>

#include <algorithm>

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

std::vector<pid_t> session_members(pid_t sid) {
  return live_processes([sid](const ProcStat& st) { return st.session == sid; });
}

std::vector<pid_t> children_of(pid_t parent) {
  return live_processes([parent](const ProcStat& st) { return st.ppid == parent; });
}

void kill_sessions(const std::vector<pid_t>& sids) {
  if (sids.empty()) return;
  for (int round = 0; round < 20; ++round) {
    auto victims = live_processes([&sids](const ProcStat& st) {
      return std::find(sids.begin(), sids.end(), st.session) != sids.end();
    });
    if (victims.empty()) return;
    for (pid_t pid : victims) ::kill(pid, SIGKILL);
  }
}

}  // namespace ddprun::os
