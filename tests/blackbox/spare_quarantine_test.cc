// Hot spares: agents beyond MAX wait without disturbing the running job, take the
// place of a node that is lost, and leave with the job's outcome when it ends without
// them (over c10d, and over etcd, whose state outlives every agent). Quarantine: a node
// whose workers keep failing is kept out, and a spare takes its place.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>

#include "tests/blackbox/ddprun_process.h"
#include "tests/blackbox/elastic_job.h"
#include "tests/helpers/etcd_cluster.h"

namespace ddprun::test {
namespace {

const std::map<std::string, std::optional<std::string>> kEnv{{"OMP_NUM_THREADS", "1"}};
constexpr const char* kWaiting = "waiting as a spare";

bool empty_dir(const std::string& dir) { return std::filesystem::is_empty(dir); }

// A job of `job.nnodes` whose workers mark their world in their agent's directory and
// end (with `code`) once the test writes the stop file.
struct SpareJob {
  Job job;
  std::string root = make_temp_dir();
  std::string stop = root + "/stop";
  std::vector<std::string> code{"0"};
  std::vector<std::string> flags{"--no_tracking"};

  std::string dir(const std::string& name) {
    std::string d = root + "/" + name;
    std::filesystem::create_directories(d);
    return d;
  }
  std::unique_ptr<DdprunProcess> agent(const std::string& name,
                                       std::optional<bool> host = std::nullopt) {
    std::vector<std::string> worker{"mark_until", dir(name), stop};
    worker.insert(worker.end(), code.begin(), code.end());
    return std::make_unique<DdprunProcess>(job.agent(flags, worker, host), kEnv);
  }
  void end_workers() { std::ofstream(stop) << "stop\n"; }
};

TEST(Spares, SparesLeaveTheJobAloneTakeALostNodesPlaceAndLeaveWhenItSucceeds) {
  SpareJob j;
  j.job.nnodes = "2";
  j.flags = {"--tracking_dir", j.root + "/runs"};
  auto a = j.agent("a", true);
  auto b = j.agent("b", false);
  ASSERT_TRUE(eventually([&] {
    return !markers(j.dir("a"), 2).empty() && !markers(j.dir("b"), 2).empty();
  })) << a->err_so_far();
  auto s1 = j.agent("s1", false);
  auto s2 = j.agent("s2", false);
  ASSERT_TRUE(eventually([&] {
    return s1->err_so_far().find(kWaiting) != std::string::npos &&
           s2->err_so_far().find(kWaiting) != std::string::npos;
  })) << s1->err_so_far() << s2->err_so_far();
  EXPECT_TRUE(empty_dir(j.dir("s1")) && empty_dir(j.dir("s2")));
  EXPECT_EQ(a->err_so_far().find("re-rendezvous"), std::string::npos)
      << "spares do not disturb the running round\n"
      << a->err_so_far();
  // The run lists them while the round runs, as its primary sees them come.
  std::string runs = j.root + "/runs";
  EXPECT_TRUE(eventually([&] {
    return run_ddprun({"runs", "show", j.job.id, "--tracking_dir", runs})
               .out.find("spares:   2 waiting: 127.0.0.1 (pid ") != std::string::npos;
  })) << run_ddprun({"runs", "show", j.job.id, "--tracking_dir", runs}).out;

  // The node that dies is replaced by one spare: a world of two again, at once (with
  // --nnodes=2 and no spare, the job would end here).
  ::kill(b->pid(), SIGKILL);
  b->wait();
  ASSERT_TRUE(eventually([&] {
    return markers(j.dir("s1"), 2).size() + markers(j.dir("s2"), 2).size() == 1;
  })) << a->err_so_far() << s1->err_so_far() << s2->err_so_far();
  EXPECT_NE(a->err_so_far().find("2 spare(s) waiting"), std::string::npos) << a->err_so_far();
  bool first_taken = !empty_dir(j.dir("s1"));
  DdprunProcess& member = first_taken ? *s1 : *s2;
  DdprunProcess& still_spare = first_taken ? *s2 : *s1;

  j.end_workers();
  EXPECT_EQ(a->wait(), 0) << a->err();
  EXPECT_EQ(member.wait(), 0) << member.err();
  EXPECT_NE(member.err().find("this node, a hot spare, takes a place in round 1: group rank"),
            std::string::npos)
      << "the spare says so on its own console\n"
      << member.err();
  EXPECT_EQ(still_spare.wait(), 0) << still_spare.err();
  EXPECT_EQ(still_spare.err().find("takes a place"), std::string::npos) << still_spare.err();
  EXPECT_NE(still_spare.err().find("the job finished without needing this spare node"),
            std::string::npos)
      << still_spare.err();
  // The run lists the spare that waited as the last round formed.
  Finished show = run_ddprun({"runs", "show", j.job.id, "--tracking_dir", j.root + "/runs"});
  EXPECT_NE(show.out.find("spares:   1 waiting: 127.0.0.1 (pid "), std::string::npos)
      << show.out << show.err;
}

// The order real clusters produce: a node dies and its peers' workers fail first (their
// collectives break), so the survivor begins the next round expecting the dead node
// back. The spare takes its place once its liveness expires, not at the join timeout.
TEST(Spares, ASpareTakesTheDeadNodesPlaceWhenItsPeersFailedFirst) {
  SpareJob j;
  j.job.nnodes = "2";
  j.flags = {"--no_tracking", "--max_restarts=3"};
  std::string fail = j.root + "/fail";
  DdprunProcess a(j.job.agent(j.flags, {"fail_first", j.dir("a"), fail, j.stop}, true), kEnv);
  auto b = j.agent("b", false);
  ASSERT_TRUE(eventually([&] {
    return !markers(j.dir("a"), 2).empty() && !markers(j.dir("b"), 2).empty();
  })) << a.err_so_far();
  auto s = j.agent("s", false);
  ASSERT_TRUE(eventually([&] { return s->err_so_far().find(kWaiting) != std::string::npos; }))
      << s->err_so_far();
  ::kill(b->pid(), SIGKILL);
  std::ofstream(fail) << "fail\n";  // a's workers fail at once, long before b's liveness
  b->wait();
  ASSERT_TRUE(eventually([&] { return !markers(j.dir("s"), 2).empty(); }))
      << "the spare takes b's place\n"
      << a.err_so_far() << s->err_so_far();
  // Said by whichever frees the place: the survivor, or the spare.
  EXPECT_NE((a.err_so_far() + s->err_so_far()).find("expected back are gone"), std::string::npos)
      << a.err_so_far() << s->err_so_far();
  EXPECT_TRUE(eventually([&] {
    auto mine = markers(j.dir("a"), 2);
    return std::any_of(mine.begin(), mine.end(),
                       [](const std::string& m) { return m.ends_with(".a1"); });
  })) << "a runs again, in the round after its failure\n"
      << a.err_so_far();
  j.end_workers();
  EXPECT_EQ(a.wait(), 0) << a.err();
  EXPECT_EQ(s->wait(), 0) << s->err();
}

TEST(Spares, ASpareKilledWhileWaitingHoldsNothingUp) {
  SpareJob j;
  j.job.nnodes = "1:2";
  auto a = j.agent("a", true);
  auto b = j.agent("b", false);
  ASSERT_TRUE(eventually([&] { return !markers(j.dir("b"), 2).empty(); })) << a->err_so_far();
  auto s = j.agent("s", false);
  ASSERT_TRUE(eventually([&] { return s->err_so_far().find(kWaiting) != std::string::npos; }))
      << s->err_so_far();
  ::kill(s->pid(), SIGKILL);
  s->wait();
  ::kill(b->pid(), SIGKILL);
  b->wait();
  EXPECT_TRUE(eventually([&] { return !markers(j.dir("a"), 1).empty(); }))
      << "the survivor goes on alone\n"
      << a->err_so_far();
  j.end_workers();
  EXPECT_EQ(a->wait(), 0) << a->err();
}

// etcd keeps the rendezvous after every agent is gone: a job that fails for good
// closes it as failed, and the spare leaves saying so (not at its join timeout).
TEST(Spares, ASpareLeavesWhenTheJobFailsForGood) {
  EtcdCluster etcd(1);
  SpareJob j;
  j.job.nnodes = "2";
  j.job.backend = "etcd";
  j.job.endpoint = etcd.endpoints();
  j.code = {"3"};
  auto a = j.agent("a");
  auto b = j.agent("b");
  ASSERT_TRUE(eventually([&] {
    return !markers(j.dir("a"), 2).empty() && !markers(j.dir("b"), 2).empty();
  })) << a->err_so_far();
  auto s = j.agent("s");
  ASSERT_TRUE(eventually([&] { return s->err_so_far().find(kWaiting) != std::string::npos; }))
      << s->err_so_far();
  j.end_workers();  // every worker exits 3; no restart is left
  EXPECT_EQ(a->wait(), 3) << a->err();
  EXPECT_EQ(b->wait(), 3) << b->err();
  EXPECT_EQ(s->wait(), 1) << s->err();
  EXPECT_NE(s->err().find("the job failed without needing this spare node"), std::string::npos)
      << s->err();
  EXPECT_TRUE(empty_dir(j.dir("s")));
}

TEST(Quarantine, ANodeWhoseWorkersKeepFailingIsKeptOutAndASpareTakesItsPlace) {
  SpareJob j;
  j.job.nnodes = "2";
  std::string runs = j.root + "/runs";
  j.flags = {"--max_restarts=3", "--node_failure_limit=1", "--tracking_dir", runs};
  auto a = j.agent("a", true);
  j.job.local_addr = "127.0.0.2";  // the agent's id names it
  std::vector<std::string> flags = j.flags;
  flags.emplace_back("--no_python");
  DdprunProcess b(j.job.agent_running(flags, {test_worker_binary(), "exit", "1"}, false), kEnv);
  ASSERT_TRUE(eventually([&] { return b.err_so_far().find("this node is quarantined") !=
                                      std::string::npos; }))
      << b.err_so_far() << a->err_so_far();
  EXPECT_TRUE(eventually([&] {
    return b.err_so_far().find("waits to join again") != std::string::npos;
  })) << b.err_so_far();
  j.job.local_addr = "127.0.0.3";
  auto s = j.agent("s", false);
  ASSERT_TRUE(eventually([&] { return !markers(j.dir("s"), 2).empty(); }))
      << "the new node takes the quarantined one's place\n"
      << a->err_so_far() << s->err_so_far();
  EXPECT_FALSE(world_running(j.dir("a"), 2, 2)) << "no further restart: b stayed out";
  j.end_workers();
  EXPECT_EQ(a->wait(), 0) << a->err();
  EXPECT_EQ(s->wait(), 0) << s->err();
  EXPECT_EQ(b.wait(), 1) << b.err();
  EXPECT_NE(b.err().find("the job ended while this node was quarantined"), std::string::npos)
      << b.err();
  Finished show = run_ddprun({"runs", "show", j.job.id, "--tracking_dir", runs});
  EXPECT_NE(show.out.find("quarantined: 127.0.0.2 until "), std::string::npos)
      << "named by its host\n"
      << show.out << show.err;
  // The story by host: b kept out, then the new node in its place.
  EXPECT_TRUE(std::regex_search(
      show.out, std::regex(R"(\n  \+[\d.]+ s round \d+: [^\n]*127\.0\.0\.2 kept out until )"
                           R"(\d\d:\d\d:\d\d \(1 failure)")))
      << show.out;
  EXPECT_TRUE(std::regex_search(
      show.out,
      std::regex(R"(\n  \+[\d.]+ s round \d+: [^\n]*127\.0\.0\.3 (joined|took the place))")))
      << show.out;
  EXPECT_NE(show.out.find("(1 failure(s) of its workers; last: rank 1 (local_rank 0) on node 1"),
            std::string::npos)
      << show.out;
}

TEST(Quarantine, ALimitWithoutAnElasticJobIsAClearError) {
  Finished r = run_ddprun({"--node_failure_limit=2", "--no_python", "/bin/true"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--node_failure_limit=2: quarantine keeps a node out of an elastic job"),
            std::string::npos)
      << r.err;
  r = run_ddprun({"--quarantine_cooldown=0", "--no_python", "/bin/true"});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("--quarantine_cooldown"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ddprun::test
