// One run across nodes: the agents of a multi-node job log into the primary's run;
// a node whose primary vanished keeps its records, and `ddprun runs merge` folds them in.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "tests/blackbox/ddprun_process.h"
#include "tests/blackbox/elastic_job.h"

namespace ddprun::test {
namespace {

std::map<std::string, std::optional<std::string>> env() {
  return {{"PYTHON_EXEC", "/usr/bin/python3"}, {"OMP_NUM_THREADS", "1"}};
}

size_t csv_rows(const std::string& csv, int node, int rank) {
  return csv_points(csv, std::to_string(node) + "," + std::to_string(rank) + ",0,").size();
}

TEST(SharedRun, TwoAgentsLogToOneRun) {
  std::string dir = make_temp_dir();
  std::string runs = dir + "/runs";
  Job job;
  job.nnodes = "2";
  auto args = job.agent_running({"--nproc_per_node=2", "--tracking_dir", runs, "--no_python"},
                                {DDPRUN_CPP_LOGGER, "30"});
  DdprunProcess a(args, env());
  DdprunProcess b(args, env());
  ASSERT_EQ(a.wait(), 0) << a.err();
  ASSERT_EQ(b.wait(), 0) << b.err();

  Finished csv = run_ddprun({"runs", "export", job.id, "--format", "csv", "--tracking_dir", runs});
  ASSERT_EQ(csv.code, 0) << csv.err;
  // 30 steps x 2 values from every rank, under the node that ran it.
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(csv_rows(csv.out, rank / 2, rank), 60u) << "rank " << rank << "\n" << csv.out;
  }
  Finished show = run_ddprun({"runs", "show", job.id, "--tracking_dir", runs});
  EXPECT_NE(show.out.find("status:   finished"), std::string::npos) << show.out;
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_NE(show.out.find("worker_exited attempt 0 rank " + std::to_string(rank)),
              std::string::npos)
        << "both agents' events are in the run\n"
        << show.out;
  }
  EXPECT_FALSE(std::filesystem::exists(runs + "/" + job.id + "/parts"))
      << "a node's local copy goes once the primary holds it";
}

// Workers log, flush, say so with a marker file, then wait to be stopped.
const char* kLogThenWait = R"(import os, sys, time, ddprun_tracking as run
rank = int(os.environ["RANK"])
for i in range(10):
    run.log({"v": i}, step=i)
run.flush()
open(os.path.join(sys.argv[1], "logged.%d" % rank), "w").close()
time.sleep(60)
)";

TEST(SharedRun, NodeOfAVanishedPrimaryKeepsItsRecordsForMerge) {
  std::string dir = make_temp_dir();
  std::string runs = dir + "/runs";
  std::string script = dir + "/log_then_wait.py";
  std::ofstream(script) << kLogThenWait;
  Job job;
  job.nnodes = "2";
  std::vector<std::string> flags{"--nproc_per_node=2", "--tracking_dir", runs};
  DdprunProcess primary(job.agent_running(flags, {script, dir}, true), env());
  DdprunProcess other(job.agent_running(flags, {script, dir}, false), env());
  ASSERT_TRUE(eventually(
      [&] {
        for (int r = 0; r < 4; ++r) {
          if (!std::filesystem::exists(dir + "/logged." + std::to_string(r))) return false;
        }
        return true;
      },
      std::chrono::seconds(30)));
  ::kill(primary.pid(), SIGKILL);
  primary.wait();
  EXPECT_NE(other.wait(), 0);
  std::string parts = runs + "/" + job.id + "/parts";
  ASSERT_TRUE(std::filesystem::exists(parts)) << other.err();
  std::string part = std::filesystem::directory_iterator(parts)->path();
  EXPECT_NE(other.err().find("ddprun runs merge " + part), std::string::npos) << other.err();
  std::set<int> ranks;
  for (const auto& e : std::filesystem::directory_iterator(part + "/streams")) {
    int node = 0, rank = 0, attempt = 0;
    ASSERT_EQ(std::sscanf(e.path().filename().c_str(), "n%d.r%d.a%d", &node, &rank, &attempt), 3);
    ranks.insert(rank);
  }
  ASSERT_EQ(ranks.size(), 2u);

  for (int time = 0; time < 2; ++time) {  // merging again adds nothing twice
    Finished merge = run_ddprun({"runs", "merge", part});
    ASSERT_EQ(merge.code, 0) << merge.err;
    Finished csv =
        run_ddprun({"runs", "export", job.id, "--format", "csv", "--tracking_dir", runs});
    for (int rank : ranks) {
      EXPECT_EQ(csv_rows(csv.out, rank / 2, rank), 10u) << "rank " << rank << "\n" << csv.out;
    }
  }
  Finished show = run_ddprun({"runs", "show", job.id, "--tracking_dir", runs});
  EXPECT_NE(show.out.find("worker_exited attempt 0 rank " + std::to_string(*ranks.begin())),
            std::string::npos)
      << "the node's own events after the primary vanished are merged too\n"
      << show.out;
  // The vanished primary's own workers' records: recovered from the run's streams.
  std::string run_dir = runs + "/" + job.id;
  for (int time = 0; time < 2; ++time) {  // `runs repair RUN`, or merge with its directory
    Finished recover = run_ddprun(time == 0 ? std::vector<std::string>{"runs", "repair", job.id,
                                                                       "--tracking_dir", runs}
                                            : std::vector<std::string>{"runs", "merge", run_dir});
    ASSERT_EQ(recover.code, 0) << recover.err;
    Finished csv =
        run_ddprun({"runs", "export", job.id, "--format", "csv", "--tracking_dir", runs});
    for (int rank = 0; rank < 4; ++rank) {
      EXPECT_EQ(csv_rows(csv.out, rank / 2, rank), 10u) << "rank " << rank << "\n" << csv.out;
    }
  }
  EXPECT_NE(show.out.find("status:   crashed"), std::string::npos) << show.out;
  Finished bad = run_ddprun({"runs", "merge", dir});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("part.json"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace ddprun::test
