// The orphan guard kills the sessions it watches when ddprun dies without releasing it,
// and never one it was told is over (its pid may belong to someone else by then).
#include "agent/orphan_guard.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace ddprun::agent {
namespace {

// A child in a session of its own, as a worker runs.
pid_t session_sleeper() {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setsid();
    ::execl("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

// A child still in our session: a worker forked but not yet through setsid().
pid_t sleeper_without_session() {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

// Whether `pid` (our child) was killed within a few seconds; reaps it if so.
bool killed_soon(pid_t pid) {
  for (int i = 0; i < 500; ++i) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return WIFSIGNALED(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(OrphanGuard, KillsWatchedSessionsButNotForgottenOnesWhenDdprunDies) {
  pid_t over = session_sleeper();
  pid_t running = session_sleeper();
  ASSERT_GT(over, 0);
  ASSERT_GT(running, 0);
  {
    OrphanGuard guard;
    guard.watch({over, running});
    guard.forget({over});
  }  // destroyed without release(): as if ddprun died
  EXPECT_TRUE(killed_soon(running)) << "a watched session outlived ddprun";
  int status = 0;
  EXPECT_EQ(::waitpid(over, &status, WNOHANG), 0) << "a forgotten session was killed";
  ::kill(over, SIGKILL);
  ::waitpid(over, &status, 0);
}

// ddprun may die between forking a worker and the worker's setsid(): the guard still
// kills it, by its pid, as it is in ddprun's session.
TEST(OrphanGuard, KillsAWatchedWorkerThatHasNotMadeItsSessionYet) {
  pid_t early = sleeper_without_session();
  ASSERT_GT(early, 0);
  {
    OrphanGuard guard;
    guard.watch({early});
  }
  bool killed = killed_soon(early);
  EXPECT_TRUE(killed) << "a worker caught before setsid() outlived ddprun";
  if (!killed) {
    ::kill(early, SIGKILL);
    ::waitpid(early, nullptr, 0);
  }
}

// A group of more than one write's worth: every session of it is watched.
TEST(OrphanGuard, WatchesAGroupLargerThanOneWrite) {
  pid_t worker = session_sleeper();
  ASSERT_GT(worker, 0);
  std::vector<pid_t> group;
  for (size_t i = 0; i < OrphanGuard::kBatch + 500; ++i) {
    group.push_back(static_cast<pid_t>(0x3fff0000 + i));  // beyond any pid_max: no process
  }
  group.push_back(worker);  // in the second write
  {
    OrphanGuard guard;
    guard.watch(group);
  }
  bool killed = killed_soon(worker);
  EXPECT_TRUE(killed) << "the last session of a large group outlived ddprun";
  if (!killed) {
    ::kill(worker, SIGKILL);
    ::waitpid(worker, nullptr, 0);
  }
}

}  // namespace
}  // namespace ddprun::agent
