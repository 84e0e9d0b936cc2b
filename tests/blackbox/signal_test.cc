// Signals sent to ddprun reach every worker group, and nothing ddprun started
// (workers and their children) outlives it, even when ddprun is SIGKILLed.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "tests/blackbox/ddprun_process.h"

namespace ddprun::test {
namespace {

// Every pid the workers wrote (each worker's own and its child's).
std::vector<pid_t> read_pids(const std::string& dir, int nproc) {
  std::vector<pid_t> pids;
  for (int r = 0; r < nproc; ++r) {
    std::istringstream in(read_file(dir + "/" + std::to_string(r) + ".pids"));
    pid_t p = 0;
    while (in >> p) pids.push_back(p);
  }
  return pids;
}

std::vector<pid_t> wait_for_workers(const std::string& dir, int nproc) {
  bool ready = eventually([&] { return read_pids(dir, nproc).size() == 2u * nproc; });
  EXPECT_TRUE(ready) << "workers did not start";
  auto pids = read_pids(dir, nproc);
  for (pid_t pid : pids) EXPECT_TRUE(process_alive(pid)) << pid;
  return pids;
}

void expect_all_gone(const std::vector<pid_t>& pids) {
  for (pid_t pid : pids) {
    EXPECT_TRUE(eventually([pid] { return !process_alive(pid); })) << "survivor " << pid;
  }
}

bool file_exists(const std::string& path) { return std::filesystem::exists(path); }

class Signals : public ::testing::TestWithParam<int> {};

TEST_P(Signals, AreForwardedAndLeaveNoSurvivors) {
  int sig = GetParam();
  std::string dir = make_temp_dir();
  DdprunProcess p({"--nproc_per_node=2", "--no_python", test_worker_binary(), "hang", dir},
                  {{"OMP_NUM_THREADS", "1"}});
  auto pids = wait_for_workers(dir, 2);
  ::kill(p.pid(), sig);
  EXPECT_EQ(p.wait(), 128 + sig) << p.err();
  expect_all_gone(pids);
}

INSTANTIATE_TEST_SUITE_P(Forwarding, Signals, ::testing::Values(SIGINT, SIGTERM, SIGHUP, SIGQUIT));

// Starts two workers that exit 0 on `sig`, and waits until they catch it.
std::unique_ptr<DdprunProcess> start_catching(int sig, const std::string& dir,
                                              std::vector<std::string> flags) {
  flags.insert(flags.end(), {"--nproc_per_node=2", "--no_python", test_worker_binary(), "catch",
                             std::to_string(sig), dir});
  auto p = std::make_unique<DdprunProcess>(
      flags, std::map<std::string, std::optional<std::string>>{{"OMP_NUM_THREADS", "1"}});
  EXPECT_TRUE(eventually([&] {
    return file_exists(dir + "/0.ready") && file_exists(dir + "/1.ready");
  })) << "workers did not start";
  return p;
}

TEST(ForwardedSignals, Usr1ReachesEveryWorkerAndTheJobGoesOn) {
  for (int sig : {SIGUSR1, SIGUSR2}) {
    std::string dir = make_temp_dir();
    auto p = start_catching(sig, dir, {});
    ::kill(p->pid(), sig);
    // The workers exit 0 from their handlers: the job ends as a success, not killed.
    EXPECT_EQ(p->wait(), 0) << p->err();
    EXPECT_TRUE(file_exists(dir + "/0.got") && file_exists(dir + "/1.got")) << p->err();
    EXPECT_NE(p->err().find("forwarded it to 2 worker(s); the job goes on"), std::string::npos)
        << p->err();
  }
}

TEST(ForwardedSignals, InSignalsToHandleItIsForwardedAndStopsTheJob) {
  std::string dir = make_temp_dir();
  auto p = start_catching(SIGUSR1, dir, {"--signals-to-handle=SIGTERM,usr1"});
  ::kill(p->pid(), SIGUSR1);
  EXPECT_EQ(p->wait(), 128 + SIGUSR1) << p->err();
  EXPECT_TRUE(file_exists(dir + "/0.got") && file_exists(dir + "/1.got")) << p->err();
}

TEST(ForwardedSignals, Usr1InNeitherListIsIgnoredAndNeverKillsDdprun) {
  std::string dir = make_temp_dir();
  auto p = start_catching(SIGUSR1, dir, {"--signals_to_forward="});
  ::kill(p->pid(), SIGUSR1);
  EXPECT_TRUE(eventually([&] { return p->err_so_far().find("ignored") != std::string::npos; }));
  EXPECT_TRUE(process_alive(p->pid()));
  ::kill(p->pid(), SIGTERM);
  EXPECT_EQ(p->wait(), 128 + SIGTERM) << p->err();
  EXPECT_FALSE(file_exists(dir + "/0.got") || file_exists(dir + "/1.got"));
  EXPECT_NE(p->err().find("received SIGUSR1; ignored (it is in neither --signals_to_forward nor "
                          "--signals_to_handle)"),
            std::string::npos)
      << p->err();
}

TEST(ForwardedSignals, UnknownSignalNamesAreAUsageError) {
  auto r = run_ddprun({"--signals_to_handle=SIGTERM,SIGFOO,KILL", "--no_python", "/bin/true"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--signals_to_handle=SIGTERM,SIGFOO,KILL: unknown or uncatchable "
                       "signal(s) SIGFOO, KILL; expected SIGHUP, SIGINT"),
            std::string::npos)
      << r.err;
}

TEST(SignalsGrace, WorkerIgnoringSigtermIsKilledAfterTheGracePeriod) {
  std::string dir = make_temp_dir();
  DdprunProcess p(
      {"--grace_period=0.2", "--no_python", test_worker_binary(), "hang", dir, "ignore_term"});
  auto pids = wait_for_workers(dir, 1);
  ::kill(p.pid(), SIGTERM);
  EXPECT_EQ(p.wait(), 128 + SIGTERM);
  EXPECT_NE(p.err().find("SIGKILL"), std::string::npos) << p.err();
  expect_all_gone(pids);
}

TEST(SignalsGrace, DaemonLeftByASuccessfulWorkerIsKilled) {
  std::string dir = make_temp_dir();
  Finished f =
      run_ddprun({"--nproc_per_node=1", "--no_python", test_worker_binary(), "daemon", dir});
  ASSERT_EQ(f.code, 0) << f.err;
  std::string text = read_file(dir + "/daemon.pid");
  ASSERT_FALSE(text.empty());
  pid_t daemon = static_cast<pid_t>(std::stoi(text));
  EXPECT_TRUE(eventually([&] { return !process_alive(daemon); }))
      << "daemon " << daemon << " survived";
}

TEST(SignalsGrace, SigkillOfDdprunLeavesNothingBehind) {
  std::string dir = make_temp_dir();
  DdprunProcess p(
      {"--nproc_per_node=2", "--no_python", test_worker_binary(), "hang", dir, "ignore_term"},
      {{"OMP_NUM_THREADS", "1"}});
  auto pids = wait_for_workers(dir, 2);
  ::kill(p.pid(), SIGKILL);
  p.wait();
  expect_all_gone(pids);
}

TEST(SignalsGrace, FailureStopsTheOtherWorkersAndTheirChildren) {
  std::string dir = make_temp_dir();
  // Rank 0 hangs with a child; rank 1 fails once rank 0 is up.
  DdprunProcess p({"--nproc_per_node=2", "--no_python", "/bin/sh", "-c",
                   "if [ $RANK = 1 ]; then while [ ! -f " + dir +
                       "/0.pids ]; do sleep 0.01; done; "
                       "exit 3; fi; exec " +
                       test_worker_binary() + " hang " + dir},
                  {{"OMP_NUM_THREADS", "1"}});
  EXPECT_EQ(p.wait(), 3) << p.err();
  auto pids = read_pids(dir, 1);
  ASSERT_EQ(pids.size(), 2u);
  expect_all_gone(pids);
}

}  // namespace
}  // namespace ddprun::test
