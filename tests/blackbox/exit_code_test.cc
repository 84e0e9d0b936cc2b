// Exit codes, the failure summary and restarts of the built ddprun.
#include <gtest/gtest.h>

#include "tests/blackbox/ddprun_process.h"

namespace ddprun::test {
namespace {

Finished run_worker(std::vector<std::string> flags, std::vector<std::string> worker_args) {
  flags.push_back("--no_python");
  flags.push_back(test_worker_binary());
  flags.insert(flags.end(), worker_args.begin(), worker_args.end());
  return run_ddprun(flags, {{"OMP_NUM_THREADS", "1"}});
}

TEST(ExitCode, ZeroWhenEveryWorkerSucceeds) {
  Finished f = run_worker({"--nproc_per_node=3"}, {"exit", "0"});
  EXPECT_EQ(f.code, 0) << f.err;
  EXPECT_EQ(f.err.find("FAILED"), std::string::npos);
}

TEST(ExitCode, IsTheWorkersCode) {
  for (int code : {1, 7}) {
    Finished f = run_worker({}, {"exit", std::to_string(code)});
    EXPECT_EQ(f.code, code) << f.err;
    EXPECT_NE(f.err.find("exitcode  : " + std::to_string(code)), std::string::npos) << f.err;
  }
}

TEST(ExitCode, SignalDeathIs128PlusSignal) {
  Finished kill9 = run_worker({}, {"raise", "9"});
  EXPECT_EQ(kill9.code, 137);
  EXPECT_NE(kill9.err.find("exitcode  : -9"), std::string::npos) << kill9.err;
  EXPECT_NE(kill9.err.find("Signal 9 (SIGKILL) received by PID"), std::string::npos) << kill9.err;
  Finished segv = run_worker({}, {"raise", "11"});
  EXPECT_EQ(segv.code, 139);
  EXPECT_NE(segv.err.find("SIGSEGV"), std::string::npos) << segv.err;
}

TEST(ExitCode, RootCauseIsTheFailedRankAndTheOthersAreStopped) {
  Finished f = run_worker({"--nproc_per_node=3"}, {"fail_rank", "2", "5"});
  EXPECT_EQ(f.code, 5) << f.err;
  EXPECT_NE(f.err.find("rank      : 2 (local_rank: 2)"), std::string::npos) << f.err;
  EXPECT_NE(f.err.find("<NO_OTHER_FAILURES>"), std::string::npos) << f.err;
  EXPECT_EQ(f.err.find("rank      : 0"), std::string::npos) << "stopped ranks are no failures";
}

TEST(ExitCode, SummaryShowsTheErrorFile) {
  Finished f = run_worker({"--nproc_per_node=2"}, {"error_file", "bad batch"});
  EXPECT_EQ(f.code, 1);
  EXPECT_NE(f.err.find("FAILED"), std::string::npos);
  EXPECT_NE(f.err.find("error_file: /"), std::string::npos) << f.err;
  EXPECT_NE(f.err.find("traceback : Traceback (most recent call last):\n    File"),
            std::string::npos)
      << f.err;
  EXPECT_NE(f.err.find("RuntimeError: bad batch"), std::string::npos) << f.err;
  EXPECT_NE(f.err.find("time      : 2023-11-"), std::string::npos) << "error file timestamp";
}

TEST(ExitCode, WorkersAreRestartedWithinTheBudget) {
  Finished f =
      run_worker({"--nproc_per_node=2", "--max_restarts=3", "--tee=1"}, {"fail_before", "2", "4"});
  EXPECT_EQ(f.code, 0) << f.err;
  EXPECT_NE(f.out.find("[default0]:attempt 2"), std::string::npos) << f.out;
  EXPECT_NE(f.out.find("[default1]:attempt 2"), std::string::npos) << f.out;
  EXPECT_EQ(f.out.find("attempt 3"), std::string::npos);
}

TEST(ExitCode, ExhaustedBudgetFailsWithTheLastAttemptsCode) {
  Finished f = run_worker({"--max_restarts=1"}, {"fail_before", "5", "4"});
  EXPECT_EQ(f.code, 4);
  EXPECT_NE(f.out.find("attempt 0"), std::string::npos);
  EXPECT_NE(f.out.find("attempt 1"), std::string::npos);
  EXPECT_EQ(f.out.find("attempt 2"), std::string::npos);
  EXPECT_NE(f.err.find("restarting, attempt 1 of 1"), std::string::npos) << f.err;
  EXPECT_EQ(f.err.find("FAILED"), f.err.rfind("FAILED")) << "one summary, at the end";
}

TEST(AgentStore, KeysOfAnEarlierAttemptAreGoneAfterARestart) {
  for (const char* mode : {"--standalone", "--nproc_per_node=2"}) {
    Finished f =
        run_ddprun({mode, "--max_restarts=1", "--no_python", store_worker_binary(), "leak_check"},
                   {{"OMP_NUM_THREADS", "1"}});
    EXPECT_EQ(f.code, 0) << mode << "\n" << f.out << f.err;
    EXPECT_NE(f.out.find("attempt 1 sees /leak: no"), std::string::npos) << f.out;
  }
}

TEST(ExitCode, MonitorIntervalIsAcceptedAndIgnored) {
  Finished f = run_worker({"--monitor_interval=30"}, {"exit", "0"});
  EXPECT_EQ(f.code, 0) << f.err;
}

}  // namespace
}  // namespace ddprun::test
