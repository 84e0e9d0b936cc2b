// Hang detection of the built ddprun with native (non-Python) workers.
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include <gtest/gtest.h>

#include "tests/blackbox/ddprun_process.h"
#include "tests/blackbox/elastic_job.h"

namespace ddprun::test {
namespace {

std::string report_;  // the last run's full report
const std::map<std::string, std::optional<std::string>> kQuiet{{"OMP_NUM_THREADS", "1"}};

// Where the report says every rank's stacks are.
std::string report_path(const std::string& err) {
  const std::string marker = "stacks of every rank: ";
  size_t at = err.find(marker);
  if (at == std::string::npos) return "";
  size_t start = at + marker.size();
  return err.substr(start, err.find('\n', start) - start);
}

// A worker that sleeps forever in C++ and never reports progress. (The log directory,
// which a hang keeps for its report, is removed with the test.)
Finished run_hung_worker(std::vector<std::string> flags) {
  auto logs =
      std::filesystem::temp_directory_path() / ("ddprun_hang_" + std::to_string(::getpid()));
  flags.insert(flags.end(),
               {"--log_dir", logs.string(), "--hang_timeout=1", "--hang_initial_timeout=1",
                "--no_tracking", "--no_python", test_worker_binary(), "sleep"});
  Finished f = run_ddprun(flags, {{"OMP_NUM_THREADS", "1"}});
  report_ = read_file(report_path(f.err));
  std::filesystem::remove_all(logs);
  return f;
}

TEST(Hang, ACppWorkerStuckInSleepIsReportedWithItsNativeStack) {
  // eu-stack comes with Debian's elfutils, which scripts/install_deps.sh installs.
  ASSERT_EQ(::access("/usr/bin/eu-stack", X_OK), 0) << "elfutils is not installed";
  Finished f = run_hung_worker({"--nproc_per_node=2"});
  EXPECT_EQ(f.code, 124) << f.err;
  EXPECT_NE(f.err.find("hang: no progress for"), std::string::npos) << f.err;
  EXPECT_NE(report_.find("--- native stacks"), std::string::npos) << report_;
  EXPECT_NE(report_.find("nanosleep"), std::string::npos) << report_;
  EXPECT_NE(f.err.find("are in clock_nanosleep"), std::string::npos) << f.err;
}

TEST(Hang, RestartsWithoutProgressEndWithTheirOwnExitCode) {
  Finished f = run_hung_worker({"--max_restarts=5", "--max_no_progress_restarts=1"});
  EXPECT_EQ(f.code, 125) << f.err;
  EXPECT_NE(f.err.find("restart(s) in a row got no rank past the step where it hung before"),
            std::string::npos)
      << f.err;
  EXPECT_EQ(lines_starting_with(f.err, "ddprun: hang:").size(), 2u) << f.err;
}

// Output sent straight to log files (--redirects) is progress too: a worker that prints
// a line every 0.1 s for 4 s never counts as hung under a 3 s timeout.
TEST(Hang, OutputRedirectedToFilesIsProgress) {
  auto logs =
      std::filesystem::temp_directory_path() / ("ddprun_redirect_" + std::to_string(::getpid()));
  Finished f = run_ddprun(
      {"--redirects=3", "--log_dir", logs.string(), "--hang_timeout=3", "--hang_initial_timeout=3",
       "--no_tracking", "--no_python", test_worker_binary(), "tick", "40", "100"},
      {{"OMP_NUM_THREADS", "1"}});
  std::filesystem::remove_all(logs);
  EXPECT_EQ(f.code, 0) << f.err;
  EXPECT_EQ(f.err.find("hang:"), std::string::npos) << f.err;
}

// --hang_timeout=auto learns job-wide: node B's worker prints every 250 ms, then goes
// quiet for 3 s, while node A's prints every 4 s. Learned on node B alone (x2) that
// quiet spell would be a hang; A's intervals, shared through the rendezvous store,
// make it normal.
TEST(Hang, AutoLearnsTheLongestIntervalOfTheWholeJob) {
  Job job;
  job.nnodes = "2";
  std::vector<std::string> flags{"--hang_timeout=auto", "--hang_safety_factor=2",
                                 "--hang_min_timeout=1", "--no_tracking", "--no_python"};
  std::string worker = test_worker_binary();
  DdprunProcess a(job.agent_running(flags, {worker, "tick", "4", "4000"}, true), kQuiet);
  DdprunProcess b(
      job.agent_running(
          flags, {"/bin/sh", "-c", worker + " tick 40 250 && sleep 3 && " + worker + " tick 4 250"},
          false),
      kQuiet);
  EXPECT_EQ(b.wait(std::chrono::seconds(90)), 0) << b.err();
  EXPECT_EQ(a.wait(std::chrono::seconds(90)), 0) << a.err();
  EXPECT_EQ(b.err().find("hang:"), std::string::npos) << b.err();
}

// A node whose ranks all succeeded names the node still running long after (the
// straggler warning, job-wide: the other node has no finished rank of its own to count
// from).
TEST(Hang, ANodeWhoseRanksFinishedNamesTheNodeStillRunning) {
  Job job;
  job.nnodes = "2";
  std::vector<std::string> flags{"--straggler_warning=1", "--no_tracking", "--no_python"};
  DdprunProcess done(job.agent_running(flags, {"/bin/true"}, true), kQuiet);
  DdprunProcess late(job.agent_running(flags, {"/bin/sleep", "4"}, false), kQuiet);
  EXPECT_EQ(done.wait(std::chrono::seconds(60)), 0) << done.err();
  EXPECT_EQ(late.wait(std::chrono::seconds(60)), 0) << late.err();
  EXPECT_NE(done.err().find("still running 1 s after every rank of this node exited 0"),
            std::string::npos)
      << done.err();
  EXPECT_EQ(late.err().find("still running"), std::string::npos) << late.err();
}

// A Python worker (ddprun's start-up hook catches the stack dump signal) that prints a
// step every 50 ms and writes "<pid> " to DIR/<rank>.a<attempt>; from its second attempt
// on it ends after 20 steps.
std::string stepping_python_worker(const std::string& dir) {
  std::string script = dir + "/steps.py";
  std::ofstream(script)
      << "import os, sys, time\n"
         "d, attempt = sys.argv[1], os.environ['TORCHELASTIC_RESTART_COUNT']\n"
         "open(f\"{d}/{os.environ['RANK']}.a{attempt}\", 'w').write(str(os.getpid()))\n"
         "for i in range(10**9):\n"
         "    print('step', i, flush=True)\n"
         "    time.sleep(0.05)\n"
         "    if attempt != '0' and i >= 20: break\n";
  return script;
}

pid_t pid_in(const std::string& path) {
  pid_t pid = 0;
  std::ifstream(path) >> pid;
  return pid;
}

// ddprun running stepping_python_worker on two ranks with `flags`, once rank 1 of its
// first attempt is stopped (SIGSTOP): `stopped` is its pid.
struct StoppedWorkerJob {
  std::string dir = make_temp_dir();
  std::unique_ptr<DdprunProcess> p;
  pid_t stopped = -1;

  explicit StoppedWorkerJob(std::vector<std::string> flags) {
    std::string script = stepping_python_worker(dir);
    flags.insert(flags.begin(), {"--standalone", "--nproc_per_node=2",
                                 "--hang_initial_timeout=10", "--grace_period=3",
                                 "--no_tracking", "--log_dir", dir + "/logs"});
    flags.insert(flags.end(), {script, dir});
    p = std::make_unique<DdprunProcess>(flags, kQuiet);
    EXPECT_TRUE(eventually([&] { return pid_in(dir + "/1.a0") > 0; })) << p->err_so_far();
    stopped = pid_in(dir + "/1.a0");
    if (stopped > 0) ::kill(stopped, SIGSTOP);
  }
};

// A worker that cannot run (SIGSTOP here; a process in D state in real jobs: no signal
// is delivered, no stack dump is written) is named as stopped, killed, and the job goes
// on: every wait on it (the stack capture, the stop) is bounded. Before the fix the
// capture waited for its Python stack dump for ever, and the agent with it.
TEST(Hang, AStoppedWorkerIsNamedKilledAndTheJobGoesOn) {
  StoppedWorkerJob job({"--hang_timeout=2", "--max_restarts=1"});
  ASSERT_GT(job.stopped, 0);
  DdprunProcess& p = *job.p;
  pid_t stopped = job.stopped;
  EXPECT_EQ(p.wait(std::chrono::seconds(60)), 0) << p.err();
  EXPECT_NE(p.err().find("hang: no progress for"), std::string::npos) << p.err();
  // Named with its state and where the kernel holds it.
  EXPECT_NE(p.err().find("stopped (T: do_signal_stop)"), std::string::npos) << p.err();
  EXPECT_NE(p.err().find("culprit: rank 1 "), std::string::npos) << p.err();
  EXPECT_TRUE(eventually([&] { return !process_alive(stopped); })) << "left behind: " << stopped;
}

// A stop signal as the stacks of a stopped worker are captured (or just after) ends
// ddprun within its grace period (here 3 s): the stopped worker is continued and stops.
// (LocalAgentHangTest.AStopSignalDuringTheStackCaptureEndsTheJobAtOnce holds the
// capture open for as long as it takes.)
TEST(Hang, SigtermWhileAStoppedWorkersStacksAreCapturedEndsTheJob) {
  StoppedWorkerJob job({"--hang_timeout=1", "--max_restarts=2"});
  ASSERT_GT(job.stopped, 0);
  DdprunProcess& p = *job.p;
  pid_t stopped = job.stopped;
  ASSERT_TRUE(eventually([&] {
    return p.err_so_far().find("capturing the workers' stacks") != std::string::npos;
  })) << p.err_so_far();
  ::kill(p.pid(), SIGTERM);
  EXPECT_EQ(p.wait(std::chrono::seconds(40)), 128 + SIGTERM) << p.err();
  EXPECT_TRUE(eventually([&] { return !process_alive(stopped); })) << "left behind: " << stopped;
}

TEST(Hang, BadValuesAreUsageErrorsNamingTheirSource) {
  Finished flag = run_ddprun({"--hang_timeout=soon", "/bin/true"});
  EXPECT_EQ(flag.code, 2);
  EXPECT_NE(flag.err.find("--hang_timeout=soon: expected off, auto or a number of seconds > 0"),
            std::string::npos)
      << flag.err;
  Finished env = run_ddprun({"/bin/true"}, {{"PET_HANG_SAFETY_FACTOR", "0.5"}});
  EXPECT_EQ(env.code, 2);
  EXPECT_NE(env.err.find("PET_HANG_SAFETY_FACTOR=0.5: expected a number >= 1"), std::string::npos)
      << env.err;
  Finished zero = run_ddprun({"--max_no_progress_restarts=0", "/bin/true"});
  EXPECT_EQ(zero.code, 2);
  EXPECT_NE(zero.err.find("--max_no_progress_restarts"), std::string::npos) << zero.err;
}

}  // namespace
}  // namespace ddprun::test
