// The system sampler's per-rank figures: what a sample says of a rank whose process is
// gone but not yet reaped (the sample taken as a worker fails).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "os/proc_stat.h"
#include "tracking/system_metrics.h"

namespace ddprun::tracking {
namespace {

// A child in a session of its own (as a worker is) that exits at once (`exit_now`) or
// waits to be killed; returned once its session is its own and, exiting, it is a zombie.
pid_t worker(bool exit_now) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setsid();
    if (exit_now) ::_exit(0);
    ::pause();
    ::_exit(0);
  }
  for (int i = 0; i < 2000; ++i) {
    os::ProcStat st;
    if (os::read_proc_stat(pid, st) && st.session == pid && (!exit_now || st.state == 'Z')) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return pid;
}

TEST(SystemSampler, ARankWhoseProcessExitedHasNoMemoryFigureRatherThanZero) {
  pid_t live = worker(false);
  pid_t exited = worker(true);
  SystemSampler sampler;
  auto values = sampler.sample({{0, live}, {1, exited}});
  ::kill(live, SIGKILL);
  ::waitpid(live, nullptr, 0);
  ::waitpid(exited, nullptr, 0);
  bool live_rss = false;
  for (const auto& [key, value] : values) {
    EXPECT_NE(key, "rank1/proc.memory.rssMB") << "a zombie's memory is no figure";
    if (key == "rank0/proc.memory.rssMB") live_rss = value > 0;
  }
  EXPECT_TRUE(live_rss);
}

}  // namespace
}  // namespace ddprun::tracking
