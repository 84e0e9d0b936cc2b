// The /proc/<pid>/stat parsers: the C library's one (the agent's process table and
// tracking's metrics) and the one made of system calls only (the orphan guard's).
#include "os/proc_stat.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include <gtest/gtest.h>

#include "os/process_table.h"
#include "os/raw_proc.h"

namespace ddprun::os {
namespace {

TEST(ProcStat, ReadsThisProcessEvenWithParenthesesInItsName) {
  char old_name[17] = {};
  ::prctl(PR_GET_NAME, old_name);
  ::prctl(PR_SET_NAME, "a) b (c) 1 2");
  volatile double spin = 0;
  for (int i = 0; i < 20'000'000; ++i) spin = spin + i;  // some CPU time to see
  ProcStat st;
  bool ok = read_proc_stat(::getpid(), st);
  ::prctl(PR_SET_NAME, old_name);
  ASSERT_TRUE(ok);
  EXPECT_EQ(st.pid, ::getpid());
  EXPECT_EQ(st.state, 'R');
  EXPECT_EQ(st.ppid, ::getppid());
  EXPECT_EQ(st.session, ::getsid(0));
  EXPECT_GT(st.utime + st.stime, 0u);
  EXPECT_GT(st.rss_pages, 0);
}

// The guard's reader, system calls only, lists what the C library's does: a child in a
// session of its own, a zombie, and this process with parentheses in its name.
TEST(RawProc, ListsEveryProcessWithItsSessionAndStateAsProcStatDoes) {
  pid_t leader = ::fork();
  if (leader == 0) {
    ::setsid();
    ::pause();
    ::_exit(0);
  }
  pid_t zombie = ::fork();
  if (zombie == 0) ::_exit(0);
  ASSERT_GT(leader, 0);
  ASSERT_GT(zombie, 0);
  ProcStat st;
  while (!read_proc_stat(leader, st) || st.session != leader) ::usleep(1000);
  while (!read_proc_stat(zombie, st) || st.state != 'Z') ::usleep(1000);
  char old_name[17] = {};
  ::prctl(PR_GET_NAME, old_name);
  ::prctl(PR_SET_NAME, "a) b (c) 1 2");
  std::vector<RawProcess> seen;
  bool listed = raw_for_each_process(
      [](const RawProcess& p, void* context) {
        static_cast<std::vector<RawProcess>*>(context)->push_back(p);
      },
      &seen);
  ::prctl(PR_SET_NAME, old_name);
  ::kill(leader, SIGKILL);
  ::waitpid(leader, nullptr, 0);
  ::waitpid(zombie, nullptr, 0);
  ASSERT_TRUE(listed);
  auto find = [&seen](long pid) {
    auto it = std::find_if(seen.begin(), seen.end(), [pid](const auto& p) { return p.pid == pid; });
    return it == seen.end() ? RawProcess{} : *it;
  };
  EXPECT_EQ(find(::getpid()).session, ::getsid(0));
  EXPECT_EQ(find(leader).session, leader);
  EXPECT_EQ(find(zombie).state, 'Z');
  EXPECT_EQ(find(zombie).session, ::getsid(0));
  EXPECT_GT(seen.size(), 3u);
}

TEST(ProcStat, GoneProcessIsFalse) {
  ProcStat st;
  EXPECT_FALSE(read_proc_stat(0x3fffffff, st));
}

TEST(ProcStat, ListsThisProcessAndItsChildren) {
  bool seen = false;
  for_each_process([&](const ProcStat& st) { seen = seen || st.pid == ::getpid(); });
  EXPECT_TRUE(seen);
  pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  auto children = children_of(::getpid());
  EXPECT_NE(std::find(children.begin(), children.end(), child), children.end());
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

// The tracking's samples read the job's tree only: children and grandchildren, not
// the rest of the machine.
TEST(ProcStat, DescendantsAreTheTreeBelowThisProcess) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  if (child == 0) {
    if (::fork() == 0) {
      ::close(ready[0]);
      (void)!::write(ready[1], "g", 1);  // the grandchild is up
      ::pause();
      ::_exit(0);
    }
    ::pause();
    ::_exit(0);
  }
  ::close(ready[1]);
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  std::vector<pid_t> seen;
  pid_t grandchild = 0;
  for_each_descendant([&](const ProcStat& st) {
    seen.push_back(st.pid);
    if (st.ppid == child) grandchild = st.pid;
  });
  EXPECT_NE(std::find(seen.begin(), seen.end(), child), seen.end());
  EXPECT_NE(grandchild, 0) << "the child's child";
  EXPECT_EQ(std::find(seen.begin(), seen.end(), ::getpid()), seen.end()) << "not itself";
  EXPECT_EQ(std::find(seen.begin(), seen.end(), 1), seen.end()) << "not the rest of the machine";
  if (grandchild != 0) ::kill(grandchild, SIGKILL);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

}  // namespace
}  // namespace ddprun::os
