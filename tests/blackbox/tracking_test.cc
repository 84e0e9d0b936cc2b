// The job's shared run: Python workers log from every rank across a restart, the
// launcher records the lifecycle and the final status, `ddprun runs` reads it back.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "tests/blackbox/ddprun_process.h"

namespace ddprun::test {
namespace {

// Rank 1 fails in attempt 0, but only once rank 0 has logged everything (rank 0 then
// waits to be stopped: its records must survive the SIGTERM).
const char* kLogger = R"(import os, sys, time, ddprun_tracking as run
rank = int(os.environ["RANK"]); attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
marker = os.path.join(sys.argv[1], "rank0_logged")
run.config({"lr": 0.1})
for i in range(20):
    run.log({"loss": rank + 1.0 / (i + 1)}, step=i)
run.summary({"best": rank})
if attempt == 0:
    if rank == 0:
        open(marker, "w").close()
        time.sleep(60)
    while not os.path.exists(marker):
        time.sleep(0.01)
    raise SystemExit(3)
)";

std::map<std::string, std::optional<std::string>> python_env() {
  return {{"PYTHON_EXEC", "/usr/bin/python3"}, {"OMP_NUM_THREADS", "1"}};
}

std::string write_script(const std::string& dir, const char* text) {
  std::string path = dir + "/logger.py";
  std::ofstream(path) << text;
  return path;
}

TEST(Tracking, EveryPointOfEveryRankAndAttemptIsInTheRun) {
  std::string dir = make_temp_dir();
  std::string runs = dir + "/runs";
  Finished f = run_ddprun({"--nproc_per_node=2", "--max_restarts=1", "--rdzv_id=t1",
                           "--tracking_dir", runs, write_script(dir, kLogger), dir},
                          python_env());
  ASSERT_EQ(f.code, 0) << f.err;
  Finished csv = run_ddprun({"runs", "export", "t1", "--format", "csv", "--tracking_dir", runs});
  ASSERT_EQ(csv.code, 0) << csv.err;
  // 2 ranks x 2 attempts x 20 points, each with its rank and attempt.
  for (int rank : {0, 1}) {
    for (int attempt : {0, 1}) {
      std::string prefix = "0," + std::to_string(rank) + "," + std::to_string(attempt) + ",";
      EXPECT_EQ(lines_starting_with(csv.out, prefix).size(), 20u) << prefix << "\n" << csv.out;
    }
  }
  Finished show = run_ddprun({"runs", "show", "t1", "--tracking_dir", runs});
  EXPECT_NE(show.out.find("status:   finished (exit code 0)"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("restart attempt 0"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("worker_exited attempt 0 rank 1  {\"exitcode\":3"), std::string::npos)
      << show.out;
  Finished list = run_ddprun({"runs", "list", "--tracking_dir", runs});
  EXPECT_NE(list.out.find("t1"), std::string::npos);
}

TEST(Tracking, FailedRunRecordsTheRootCause) {
  std::string dir = make_temp_dir();
  Finished f = run_ddprun(
      {"--rdzv_id=t2", "--tracking_dir", dir, "--no_python", test_worker_binary(), "exit", "7"});
  EXPECT_EQ(f.code, 7);
  Finished show = run_ddprun({"runs", "show", "t2", "--tracking_dir", dir});
  EXPECT_NE(show.out.find("status:   failed (exit code 7)"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("cause:    rank 0 (local_rank 0)"), std::string::npos) << show.out;
}

TEST(Tracking, UnwritableTrackingDirFailsBeforeAnyWorkerStarts) {
  std::string dir = make_temp_dir();
  std::string marker = dir + "/worker_ran";
  std::string blocked = dir + "/file_not_dir";
  std::ofstream(blocked) << "x";
  Finished f = run_ddprun(
      {"--tracking_dir", blocked + "/runs", "--no_python", "/bin/sh", "-c", "touch " + marker});
  EXPECT_EQ(f.code, 1);
  EXPECT_NE(f.err.find("cannot write the tracking directory " + blocked), std::string::npos)
      << f.err;
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST(Tracking, SigtermEndsTheRunKilledAndSigkillLeavesItCrashed) {
  for (int sig : {SIGTERM, SIGKILL}) {
    std::string dir = make_temp_dir();
    std::string pids = make_temp_dir();
    DdprunProcess p(
        {"--rdzv_id=t3", "--tracking_dir", dir, "--no_python", test_worker_binary(), "hang", pids});
    ASSERT_TRUE(eventually([&] { return !read_file(pids + "/0.pids").empty(); }));
    ::kill(p.pid(), sig);
    p.wait();
    Finished list = run_ddprun({"runs", "list", "--tracking_dir", dir});
    EXPECT_NE(list.out.find(sig == SIGTERM ? "killed" : "crashed"), std::string::npos) << list.out;
  }
}

TEST(Tracking, TornRecordOfAKilledWorkerIsCountedNotStored) {
  std::string dir = make_temp_dir();
  Finished f =
      run_ddprun({"--rdzv_id=t4", "--tracking_dir", dir, "--no_python", "/bin/sh", "-c",
                  "printf '{\"k\":\"log\",\"seq\":1,\"d\":{\"a\":1}}\\n{\"k\":\"log\",\"se' "
                  ">> \"$DDPRUN_TRACKING_STREAM\"; kill -9 $$"});
  EXPECT_EQ(f.code, 137);
  EXPECT_NE(f.err.find("1 torn"), std::string::npos) << f.err;
  Finished csv = run_ddprun({"runs", "export", "t4", "--format", "csv", "--tracking_dir", dir});
  EXPECT_EQ(lines_starting_with(csv.out, "0,0,0,1,").size(), 1u) << csv.out;
}

TEST(Tracking, CppWorkersLogThroughTheHeader) {
  std::string dir = make_temp_dir();
  Finished f = run_ddprun({"--nproc_per_node=2", "--rdzv_id=cpp", "--tracking_dir", dir,
                           "--no_python", DDPRUN_CPP_LOGGER, "50"},
                          {{"OMP_NUM_THREADS", "1"}});
  ASSERT_EQ(f.code, 0) << f.err;
  Finished csv = run_ddprun({"runs", "export", "cpp", "--format", "csv", "--tracking_dir", dir});
  EXPECT_EQ(lines_starting_with(csv.out, "0,0,0,").size(), 100u) << "50 x (loss, rank)";
  EXPECT_EQ(lines_starting_with(csv.out, "0,1,0,").size(), 100u);
  EXPECT_NE(csv.out.find("0,1,0,50,"), std::string::npos) << "seq runs to 50";
}

TEST(Tracking, SystemMetricsOfEveryWorkerTree) {
  std::string dir = make_temp_dir();
  // Each worker keeps a child busy: its CPU and memory count for the worker's rank.
  Finished f = run_ddprun(
      {"--nproc_per_node=2", "--rdzv_id=sys", "--tracking_dir", dir, "--tracking_interval=0.2",
       "--no_python", "/bin/sh", "-c", "timeout 1 sh -c 'while :; do :; done'; true"},
      {{"OMP_NUM_THREADS", "1"}});
  ASSERT_EQ(f.code, 0) << f.err;
  Finished show = run_ddprun({"runs", "show", "sys", "--tracking_dir", dir});
  for (const char* key : {"memory_percent", "rank0/proc.memory.rssMB", "rank1/proc.memory.rssMB",
                          "rank0/cpu", "rank1/cpu"}) {
    EXPECT_NE(show.out.find(std::string("  ") + key + "  "), std::string::npos) << key << "\n"
                                                                                << show.out;
  }
}

TEST(Tracking, RunsCommandErrors) {
  std::string dir = make_temp_dir();
  Finished unknown = run_ddprun({"runs", "show", "nope", "--tracking_dir", dir});
  EXPECT_EQ(unknown.code, 1);
  EXPECT_NE(unknown.err.find("no run 'nope'"), std::string::npos) << unknown.err;
  EXPECT_EQ(run_ddprun({"runs"}).code, 2);
  EXPECT_EQ(run_ddprun({"runs", "export", "x", "--format", "xml"}).code, 2);
}

TEST(Tracking, TheSameRunIdAgainMakesANewRun) {
  std::string dir = make_temp_dir();
  std::string runs = dir + "/runs";
  std::vector<std::string> args{"--nproc_per_node=1",
                                "--rdzv_id=again",
                                "--tracking_dir",
                                runs,
                                "--no_python",
                                DDPRUN_CPP_LOGGER,
                                "5"};
  ASSERT_EQ(run_ddprun(args).code, 0);
  Finished second = run_ddprun(args);
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_NE(second.err.find("this job's run is 'again.1'"), std::string::npos) << second.err;
  for (std::string id : {"again", "again.1"}) {
    Finished csv = run_ddprun({"runs", "export", id, "--format", "csv", "--tracking_dir", runs});
    EXPECT_EQ(lines_starting_with(csv.out, "0,0,0,").size(), 10u)
        << id << " holds its own job's points only\n"
        << csv.out;
  }
}

TEST(Tracking, NoTrackingLeavesNothingAndWorkersGetWandbGroup) {
  std::string dir = make_temp_dir();
  Finished off =
      run_ddprun({"--no_tracking", "--tracking_dir", dir + "/runs", "--no_python", "/bin/true"});
  EXPECT_EQ(off.code, 0);
  EXPECT_FALSE(std::filesystem::exists(dir + "/runs"));
  Finished on = run_ddprun({"--rdzv_id=grp", "--tracking_dir", dir, "--tee=1", "--no_python",
                            test_worker_binary(), "env"});
  EXPECT_NE(on.out.find("WANDB_RUN_GROUP=grp"), std::string::npos);
  Finished kept = run_ddprun({"--rdzv_id=grp2", "--tracking_dir", dir, "--tee=1", "--no_python",
                              test_worker_binary(), "env"},
                             {{"WANDB_RUN_GROUP", "mine"}});
  EXPECT_NE(kept.out.find("WANDB_RUN_GROUP=mine"), std::string::npos);
}

}  // namespace
}  // namespace ddprun::test
