// kill_own_children: what it kills at the end of every attempt, and what it leaves to
// the orphan guard's owner.
#include "os/process_table.h"

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include <gtest/gtest.h>

namespace ddprun::os {
namespace {

int wait_forever(void*) {
  for (;;) ::pause();
}

// A child with no exit signal (as the orphan guard is where it shares ddprun's memory):
// a copy of this process, on a stack of its own.
pid_t clone_child(std::vector<char>& stack) {
  stack.resize(64 * 1024);
  return ::clone(wait_forever, stack.data() + stack.size(), 0, nullptr);
}

bool alive(pid_t pid) {
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT | __WALL) ==
             0 &&
         info.si_pid == 0;
}

void end(pid_t pid) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, __WALL);
}

TEST(KillOwnChildren, LeavesAProcessWhoseOnlyChildrenAreCloneChildrenAlone) {
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT), -1) << "a child left over";
  ASSERT_EQ(errno, ECHILD);
  std::vector<char> stack;
  pid_t guard = clone_child(stack);
  ASSERT_GT(guard, 0);
  kill_own_children(-1);
  EXPECT_TRUE(alive(guard)) << "a clone child was taken for a leftover";
  end(guard);
}

// With a plain child there is a reading of /proc, which lists every child.
TEST(KillOwnChildren, KillsEveryChildButTheSpareOneWhereThereIsAPlainOne) {
  std::vector<char> stack;
  pid_t guard = clone_child(stack);
  ASSERT_GT(guard, 0);
  pid_t spare = ::fork();
  if (spare == 0) wait_forever(nullptr);
  pid_t leftover = ::fork();
  if (leftover == 0) wait_forever(nullptr);
  ASSERT_GT(spare, 0);
  ASSERT_GT(leftover, 0);
  kill_own_children(spare);
  int status = 0;
  ASSERT_EQ(::waitpid(leftover, &status, 0), leftover);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_FALSE(alive(guard));
  EXPECT_TRUE(alive(spare));
  end(spare);
  end(guard);
}

}  // namespace
}  // namespace ddprun::os
