#include "os/process_table.h"

#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <set>

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

// Appends the children the kernel lists for every thread of `pid` ("self" for this
// process). False where the kernel keeps no such lists (nothing appended then).
bool append_children(const char* pid, std::vector<pid_t>& out) {
  char dir_path[64];
  std::snprintf(dir_path, sizeof(dir_path), "/proc/%s/task", pid);
  DIR* tasks = ::opendir(dir_path);
  if (tasks == nullptr) return false;
  bool listed = false;
  while (dirent* t = ::readdir(tasks)) {
    if (t->d_name[0] == '.') continue;
    char path[sizeof(dir_path) + 256 + sizeof("/children")];  // d_name: 255 bytes at most
    std::snprintf(path, sizeof(path), "%s/%s/children", dir_path, t->d_name);
    FILE* f = std::fopen(path, "re");
    if (f == nullptr) continue;
    listed = true;
    int child = 0;
    while (std::fscanf(f, "%d", &child) == 1) out.push_back(child);
    std::fclose(f);
  }
  ::closedir(tasks);
  return listed;
}

}  // namespace

std::vector<pid_t> children_of(pid_t parent) {
  return live_processes([parent](const ProcStat& st) { return st.ppid == parent; });
}

std::vector<pid_t> own_children() {
  std::vector<pid_t> listed;
  if (!append_children("self", listed)) return children_of(::getpid());
  std::vector<pid_t> found;
  for (pid_t pid : listed) {
    ProcStat st;
    if (read_proc_stat(pid, st) && st.state != 'Z') found.push_back(pid);
  }
  return found;
}

void for_each_descendant(const std::function<void(const ProcStat&)>& visit) {
  std::vector<pid_t> next;
  if (!append_children("self", next)) return for_each_process(visit);
  std::set<pid_t> seen;
  while (!next.empty()) {
    pid_t pid = next.back();
    next.pop_back();
    ProcStat st;
    if (!seen.insert(pid).second || !read_proc_stat(pid, st)) continue;
    visit(st);
    char name[16];
    std::snprintf(name, sizeof(name), "%d", static_cast<int>(pid));
    append_children(name, next);
  }
}

void kill_own_children(pid_t spare) {
  // No child, live or not, but "clone" children (a guard sharing ddprun's memory, which
  // has no exit signal): nothing to read. Whatever a subreaper inherits is a plain child.
  siginfo_t info{};
  if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) == -1 && errno == ECHILD) return;
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

}  // namespace ddprun::os
