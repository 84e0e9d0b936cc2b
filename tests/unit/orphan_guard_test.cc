// The orphan guard kills the sessions it watches when ddprun dies without releasing it,
// and never one it was told is over (its pid may belong to someone else by then).
#include "agent/orphan_guard.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "os/kernel_release.h"
#include "os/raw_syscall.h"

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

// Each test runs with the guard as this machine makes it (sharing ddprun's memory where
// it can) and as a fork, the way kernels before 5.16 and other architectures get it.
class OrphanGuardTest : public ::testing::TestWithParam<bool> {};

INSTANTIATE_TEST_SUITE_P(OrphanGuard, OrphanGuardTest, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "AsMade" : "AsAFork"; });

TEST_P(OrphanGuardTest, KillsWatchedSessionsButNotForgottenOnesWhenDdprunDies) {
  pid_t over = session_sleeper();
  pid_t running = session_sleeper();
  ASSERT_GT(over, 0);
  ASSERT_GT(running, 0);
  {
    OrphanGuard guard(GetParam());
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
TEST_P(OrphanGuardTest, KillsAWatchedWorkerThatHasNotMadeItsSessionYet) {
  pid_t early = sleeper_without_session();
  ASSERT_GT(early, 0);
  {
    OrphanGuard guard(GetParam());
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
TEST_P(OrphanGuardTest, WatchesAGroupLargerThanOneWrite) {
  pid_t worker = session_sleeper();
  ASSERT_GT(worker, 0);
  std::vector<pid_t> group;
  for (size_t i = 0; i < OrphanGuard::kBatch + 500; ++i) {
    group.push_back(static_cast<pid_t>(0x3fff0000 + i));  // beyond any pid_max: no process
  }
  group.push_back(worker);  // in the second write
  {
    OrphanGuard guard(GetParam());
    guard.watch(group);
  }
  bool killed = killed_soon(worker);
  EXPECT_TRUE(killed) << "the last session of a large group outlived ddprun";
  if (!killed) {
    ::kill(worker, SIGKILL);
    ::waitpid(worker, nullptr, 0);
  }
}

// A release of ddprun's own stays quiet: the guard exits, killing nothing.
TEST_P(OrphanGuardTest, ReleasedItExitsAndKillsNothing) {
  pid_t worker = session_sleeper();
  ASSERT_GT(worker, 0);
  pid_t guard_pid = 0;
  {
    OrphanGuard guard(GetParam());
    guard_pid = guard.pid();
    guard.watch({worker});
    guard.release();
  }
  int status = 0;
  ASSERT_EQ(::waitpid(guard_pid, &status, __WALL), guard_pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(::waitpid(worker, &status, WNOHANG), 0) << "a released guard killed a worker";
  ::kill(worker, SIGKILL);
  ::waitpid(worker, &status, 0);
}

// Whether `pid` (not our child) is gone or a zombie within a few seconds.
bool gone_soon(pid_t pid) {
  for (int i = 0; i < 500; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return true;
    auto paren = line.rfind(')');
    if (paren != std::string::npos && line.size() > paren + 2 && line[paren + 2] == 'Z')
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// A forked "ddprun": a guard told to stay until the process ends, watching `worker`,
// released or not, then the object destroyed; the process exits 200 ms later.
struct StayingGuard {
  pid_t guard = 0;
  bool stayed = false;  // still there 200 ms after its object went
};

std::optional<StayingGuard> ddprun_whose_guard_stays(bool share, pid_t worker, bool release) {
  int fds[2];
  if (::pipe(fds) != 0) return std::nullopt;
  pid_t ddprun = ::fork();
  if (ddprun == 0) {
    StayingGuard out;
    {
      OrphanGuard guard(share);
      guard.stay_until_exit();
      out.guard = guard.pid();
      guard.watch({worker});
      if (release) guard.release();
    }
    out.stayed = true;
    for (int i = 0; i < 20 && out.stayed; ++i) {
      out.stayed = ::waitpid(out.guard, nullptr, WNOHANG | __WALL) == 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    (void)!::write(fds[1], &out, sizeof(out));
    ::_exit(0);
  }
  ::close(fds[1]);
  StayingGuard out;
  bool read = ::read(fds[0], &out, sizeof(out)) == static_cast<ssize_t>(sizeof(out));
  ::close(fds[0]);
  int status = 0;
  bool exited = ::waitpid(ddprun, &status, 0) == ddprun && WIFEXITED(status);
  if (!read || !exited) return std::nullopt;
  return out;
}

// Released, a guard told to stay outlives its object and ends with the process (ddprun's
// memory is then let go by the guard, after ddprun's parent has its status), killing
// nothing.
TEST_P(OrphanGuardTest, ReleasedAndStayingItEndsWithTheProcessAndKillsNothing) {
  pid_t worker = session_sleeper();
  ASSERT_GT(worker, 0);
  auto run = ddprun_whose_guard_stays(GetParam(), worker, true);
  ASSERT_TRUE(run) << "the forked ddprun did not report";
  EXPECT_TRUE(run->stayed) << "the guard ended with its object, not with the process";
  EXPECT_TRUE(gone_soon(run->guard)) << "the guard outlived the process it guards";
  int status = 0;
  EXPECT_EQ(::waitpid(worker, &status, WNOHANG), 0) << "a released guard killed a worker";
  ::kill(worker, SIGKILL);
  ::waitpid(worker, &status, 0);
}

// Not released, a guard told to stay kills the sessions when the process dies, not when
// its object goes.
TEST_P(OrphanGuardTest, StayingItKillsWhenTheProcessDiesNotWithItsObject) {
  pid_t worker = session_sleeper();
  ASSERT_GT(worker, 0);
  auto run = ddprun_whose_guard_stays(GetParam(), worker, false);
  ASSERT_TRUE(run) << "the forked ddprun did not report";
  EXPECT_TRUE(run->stayed) << "the guard ended with its object, not with the process";
  bool killed = killed_soon(worker);
  EXPECT_TRUE(killed) << "a watched session outlived ddprun";
  if (!killed) {
    ::kill(worker, SIGKILL);
    ::waitpid(worker, nullptr, 0);
  }
  EXPECT_TRUE(gone_soon(run->guard));
}

// Whether /proc/<pid>/maps lists a mapping starting at `address`.
bool maps_list(pid_t pid, const void* address) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  char start[32];
  std::snprintf(start, sizeof(start), "%lx-", reinterpret_cast<unsigned long>(address));
  for (std::string line; std::getline(maps, line);) {
    if (line.rfind(start, 0) == 0) return true;
  }
  return false;
}

// Where it can, the guard runs in ddprun's memory, not in a copy: a mapping made after
// it started is its too (so no page ddprun writes is copied for it). A fork is asked for
// here as the other way.
TEST(OrphanGuard, SharesDdprunsMemoryWhereTheKernelAllowsIt) {
  bool can = os::kernel_at_least(5, 16) && os::kRawSyscalls;
  OrphanGuard shared(true);
  OrphanGuard forked(false);
  EXPECT_EQ(shared.shares_memory(), can);
  EXPECT_FALSE(forked.shares_memory());
  void* later = ::mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(later, MAP_FAILED);
  EXPECT_EQ(maps_list(shared.pid(), later), can);
  EXPECT_FALSE(maps_list(forked.pid(), later));
  ::munmap(later, 4096);
  shared.release();
  forked.release();
}

TEST(KernelRelease, ComparesMajorThenMinor) {
  EXPECT_TRUE(os::release_at_least("6.1.0-28-amd64", 5, 16));
  EXPECT_TRUE(os::release_at_least("5.16.0", 5, 16));
  EXPECT_FALSE(os::release_at_least("5.15.0-91-generic", 5, 16));
  EXPECT_FALSE(os::release_at_least("4.18.0-513.el8.x86_64", 5, 16));
  EXPECT_FALSE(os::release_at_least("", 5, 16));
  EXPECT_FALSE(os::release_at_least("6", 5, 16));
  EXPECT_FALSE(os::release_at_least("six.one", 5, 16));
}

}  // namespace
}  // namespace ddprun::agent
