// The job's shared run: Python workers log from every rank across a restart, the
// launcher records the lifecycle and the final status, `ddprun runs` reads it back.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

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
      EXPECT_EQ(csv_points(csv.out, prefix).size(), 20u) << prefix << "\n" << csv.out;
    }
  }
  // What the workers logged with config() and summary(), with who logged it.
  EXPECT_NE(csv.out.find("\n0,1,1,,,,config/lr,0.1\n"), std::string::npos) << csv.out;
  EXPECT_NE(csv.out.find("\n0,1,0,,,,summary/best,1\n"), std::string::npos) << csv.out;
  Finished jsonl = run_ddprun({"runs", "export", "t1", "--tracking_dir", runs});
  EXPECT_NE(jsonl.out.find(R"({"node":0,"rank":0,"attempt":1,"kind":"summary","key":"best","value":0})"),
            std::string::npos)
      << jsonl.out;
  Finished show = run_ddprun({"runs", "show", "t1", "--tracking_dir", runs});
  EXPECT_NE(show.out.find("\nconfig:\n  KEY  VALUE  RANKS\n  lr   0.1    0,1\n"), std::string::npos)
      << show.out;
  EXPECT_NE(show.out.find("  best  0      0\n  best  1      1\n"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("status:   finished (exit code 0)"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("restart attempt 0"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("worker_exited attempt 0 rank 1  {\"exitcode\":3"), std::string::npos)
      << show.out;
  Finished list = run_ddprun({"runs", "list", "--tracking_dir", runs});
  EXPECT_NE(list.out.find("t1"), std::string::npos);
}

// The client is importable in every Python worker ddprun starts: with --no_tracking its
// calls do nothing and no run is made.
TEST(Tracking, WithoutTrackingTheClientImportsAndDoesNothing) {
  std::string dir = make_temp_dir();
  std::string script = dir + "/untracked.py";
  std::ofstream(script) << "import ddprun_tracking as t\n"
                           "t.config({'lr': 0.1}); t.log({'loss': 1.0}); t.summary({'best': 1})\n"
                           "print('active', t.active())\n";
  Finished f = run_ddprun({"--no_tracking", "--tracking_dir", dir + "/runs", script}, python_env());
  ASSERT_EQ(f.code, 0) << f.err;
  EXPECT_EQ(f.out, "active False\n");
  EXPECT_FALSE(std::filesystem::exists(dir + "/runs"));
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

// The workers start while the run is described: one that kills ddprun at once still
// leaves a run that `runs list` shows as crashed.
TEST(Tracking, AJobKilledAsItsWorkerStartsLeavesACrashedRun) {
  std::string dir = make_temp_dir();
  Finished f = run_ddprun(
      {"--rdzv_id=t5", "--tracking_dir", dir, "--no_python", "/bin/sh", "-c", "kill -9 $PPID"});
  EXPECT_EQ(f.code, 128 + SIGKILL) << f.err;
  Finished list = run_ddprun({"runs", "list", "--tracking_dir", dir});
  EXPECT_NE(list.out.find("t5"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("crashed"), std::string::npos) << list.out;
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
  EXPECT_EQ(csv_points(csv.out, "0,0,0,1,").size(), 1u) << csv.out;
}

TEST(Tracking, CppWorkersLogThroughTheHeader) {
  std::string dir = make_temp_dir();
  Finished f = run_ddprun({"--nproc_per_node=2", "--rdzv_id=cpp", "--tracking_dir", dir,
                           "--no_python", DDPRUN_CPP_LOGGER, "50"},
                          {{"OMP_NUM_THREADS", "1"}});
  ASSERT_EQ(f.code, 0) << f.err;
  Finished csv = run_ddprun({"runs", "export", "cpp", "--format", "csv", "--tracking_dir", dir});
  EXPECT_EQ(csv_points(csv.out, "0,0,0,").size(), 100u) << "50 x (loss, rank)";
  EXPECT_EQ(csv_points(csv.out, "0,1,0,").size(), 100u);
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

TEST(Tracking, ARunIsShownByTheNameItWasGivenOrAsLatest) {
  std::string dir = make_temp_dir();
  Finished f = run_ddprun({"--run_name=my-first-run", "--tracking_dir", dir, "--no_python",
                           test_worker_binary(), "exit", "7"});
  EXPECT_EQ(f.code, 7);
  for (const char* ref : {"my-first-run", "latest"}) {
    Finished show = run_ddprun({"runs", "show", ref, "--tracking_dir", dir});
    EXPECT_EQ(show.code, 0) << ref << ": " << show.err;
    EXPECT_NE(show.out.find("(my-first-run)"), std::string::npos) << ref << ": " << show.out;
    EXPECT_NE(show.out.find("status:   failed (exit code 7)"), std::string::npos) << show.out;
  }
}

TEST(Tracking, ExportWritesToTheFileGivenAndAFlagThatDoesNotApplyIsAnError) {
  std::string dir = make_temp_dir();
  ASSERT_EQ(run_ddprun({"--rdzv_id=ex", "--tracking_dir", dir, "--no_python", "/bin/true"}).code, 0);
  for (const char* format : {"csv", "jsonl"}) {
    std::string file = dir + "/out." + format;
    Finished f = run_ddprun({"runs", "export", "ex", "--format", format, "-o", file,
                             "--tracking_dir", dir});
    EXPECT_EQ(f.code, 0) << f.err;
    EXPECT_EQ(f.out, "wrote " + file + "\n") << "nothing else on standard output";
    EXPECT_TRUE(std::filesystem::exists(file)) << format;
  }
  std::ifstream csv(dir + "/out.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header, "node,rank,attempt,seq,wall,step,key,value");
  Finished show = run_ddprun({"runs", "show", "ex", "--format", "csv", "--tracking_dir", dir});
  EXPECT_EQ(show.code, 2);
  EXPECT_NE(show.err.find("--format does not apply to 'show'"), std::string::npos) << show.err;
  Finished list = run_ddprun({"runs", "list", "-o", "x", "--tracking_dir", dir});
  EXPECT_EQ(list.code, 2);
  EXPECT_NE(list.err.find("-o/--output does not apply to 'list' (it is for: export and report)"),
            std::string::npos)
      << list.err;
}

TEST(Tracking, RunsCommandErrors) {
  std::string dir = make_temp_dir();
  Finished unknown = run_ddprun({"runs", "show", "nope", "--tracking_dir", dir});
  EXPECT_EQ(unknown.code, 1);
  EXPECT_NE(unknown.err.find("no run 'nope'"), std::string::npos) << unknown.err;
  EXPECT_EQ(run_ddprun({"runs"}).code, 2);
  Finished help = run_ddprun({"runs", "--help"});
  EXPECT_EQ(help.code, 0);
  for (const char* verb : {"list", "show RUN", "export RUN", "report RUN", "repair RUN", "merge",
                           "serve", "latest"}) {
    EXPECT_NE(help.out.find(verb), std::string::npos) << verb << "\n" << help.out;
  }
  EXPECT_EQ(run_ddprun({"runs", "export", "x", "--format", "xml"}).code, 2);
  // Each verb has its own help, and a verb without its RUN says so.
  Finished show_help = run_ddprun({"runs", "show", "--help"});
  EXPECT_EQ(show_help.code, 0);
  EXPECT_EQ(show_help.out.rfind("usage: ddprun runs show RUN", 0), 0u) << show_help.out;
  EXPECT_EQ(run_ddprun({"runs", "help", "export"}).out.rfind("usage: ddprun runs export RUN", 0), 0u);
  Finished no_run = run_ddprun({"runs", "show"});
  EXPECT_EQ(no_run.code, 2);
  EXPECT_EQ(no_run.err.rfind("ddprun runs show: error: which run? (a RUN is missing)\n", 0), 0u)
      << no_run.err;
  // Where no runs are, how to name where they are; PET_TRACKING_DIR names it as for a job.
  Finished nowhere = run_ddprun({"runs", "list", "--tracking_dir", dir + "/none"});
  EXPECT_EQ(nowhere.code, 1);
  EXPECT_NE(nowhere.err.find("no tracking directory " + dir + "/none here: a job keeps its runs "
                             "where it was launched"),
            std::string::npos)
      << nowhere.err;
  Finished by_env = run_ddprun({"runs", "list"}, {{"PET_TRACKING_DIR", dir}});
  EXPECT_EQ(by_env.code, 0) << by_env.err;
  Finished bogus = run_ddprun({"runs", "bogus"});
  EXPECT_EQ(bogus.code, 2);
  EXPECT_NE(bogus.err.find("'bogus' is not a verb of runs"), std::string::npos) << bogus.err;
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
    EXPECT_EQ(csv_points(csv.out, "0,0,0,").size(), 10u)
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

TEST(Tracking, AShortJobHasSystemMetricsWithoutWaitingAnInterval) {
  std::string dir = make_temp_dir();
  // The worker ends once its run shows a sample of it: far sooner than the default
  // 15 s interval between samples (the test's limit fails it otherwise).
  std::string wait = "for i in $(seq 300); do '" + ddprun_binary() +
                     "' runs show short --tracking_dir '" + dir +
                     "' | grep -q 'rank0/proc.memory.rssMB' && exit 0; sleep 0.1; done; exit 1";
  Finished f =
      run_ddprun({"--rdzv_id=short", "--tracking_dir", dir, "--no_python", "/bin/sh", "-c", wait});
  EXPECT_EQ(f.code, 0) << "no sample while the worker ran\n" << f.err;
  Finished show = run_ddprun({"runs", "show", "short", "--tracking_dir", dir});
  EXPECT_NE(show.out.find("  memory_percent  "), std::string::npos) << show.out;
}

TEST(Tracking, EventLogHandlerConsolePrintsTheAgentsEventsAsJsonLines) {
  for (const char* tracking : {"--no_tracking", "--tracking_dir"}) {
    std::string dir = make_temp_dir();
    std::vector<std::string> args{"--event_log_handler=console", tracking};
    if (std::string(tracking) == "--tracking_dir") args.push_back(dir);
    for (const char* a : {"--nproc_per_node=2", "--no_python", "/bin/sh", "-c", "exit 0"}) {
      args.emplace_back(a);
    }
    Finished f = run_ddprun(args);
    ASSERT_EQ(f.code, 0) << f.err;
    for (const char* name : {"rendezvous", "worker_started", "worker_exited", "run_finished"}) {
      std::string field = std::string("\"name\":\"") + name + "\"";
      EXPECT_NE(f.err.find(field), std::string::npos) << tracking << ": " << name << "\n" << f.err;
    }
    EXPECT_NE(f.err.find("\"source\":\"AGENT\""), std::string::npos) << f.err;
    EXPECT_NE(f.err.find("\"exitcode\":0,\"global_rank\":1"), std::string::npos) << f.err;
  }
}

TEST(Tracking, RunsListIsNewestFirstAlignedAndFiltered) {
  std::string dir = make_temp_dir();
  for (const char* id : {"first", "second", "third"}) {
    bool fail = std::string(id) == "second";
    run_ddprun({std::string("--rdzv_id=") + id, "--run_name", std::string("name-") + id,
                "--tracking_dir", dir, "--no_python", "/bin/sh", "-c", fail ? "exit 4" : "true"});
  }
  Finished list = run_ddprun({"runs", "list", "--tracking_dir", dir});
  ASSERT_EQ(list.code, 0) << list.err;
  std::vector<std::string> lines;
  std::istringstream in(list.out);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 4u) << list.out;
  EXPECT_EQ(lines[0].rfind("RUN ", 0), 0u) << list.out;
  EXPECT_EQ(lines[1].rfind("third ", 0), 0u) << "newest first\n" << list.out;
  EXPECT_EQ(lines[2].rfind("second ", 0), 0u) << list.out;
  EXPECT_EQ(lines[3].rfind("first ", 0), 0u) << list.out;
  EXPECT_NE(lines[1].find("name-third"), std::string::npos) << "the run's name\n" << list.out;
  // Aligned: every row's status starts where the header's STATUS does.
  size_t status = lines[0].find("STATUS");
  EXPECT_EQ(lines[1].substr(status, 8), "finished") << list.out;
  EXPECT_EQ(lines[2].substr(status, 6), "failed") << list.out;
  EXPECT_NE(lines[2].find("exited with 4"), std::string::npos) << "the root cause\n" << list.out;
  Finished failed = run_ddprun({"runs", "list", "--status", "failed", "--tracking_dir", dir});
  EXPECT_EQ(std::count(failed.out.begin(), failed.out.end(), '\n'), 2) << failed.out;
  EXPECT_NE(failed.out.find("second"), std::string::npos) << failed.out;
  Finished one = run_ddprun({"runs", "list", "--limit=1", "--tracking_dir", dir});
  EXPECT_EQ(std::count(one.out.begin(), one.out.end(), '\n'), 2) << one.out;
  EXPECT_NE(one.out.find("third"), std::string::npos) << one.out;
  Finished bad = run_ddprun({"runs", "list", "--status", "exploded", "--tracking_dir", dir});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--status=exploded: expected running, finished"), std::string::npos)
      << bad.err;
}

}  // namespace
}  // namespace ddprun::test
