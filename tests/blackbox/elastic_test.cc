// Elastic (c10d) jobs: several ddprun agents on loopback agree on ranks, grow when a
// node joins, shrink when one dies, restart together and stop together.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <thread>

#include "tests/blackbox/ddprun_process.h"
#include "tests/blackbox/elastic_job.h"

namespace ddprun::test {
namespace {

const std::map<std::string, std::optional<std::string>> kEnv{{"OMP_NUM_THREADS", "1"}};

TEST(Elastic, RanksAreUniqueAndContiguousAcrossThreeNodes) {
  Job job;
  job.nnodes = "3";
  std::string dir = make_temp_dir();
  std::vector<std::unique_ptr<DdprunProcess>> agents;
  for (int i = 0; i < 3; ++i) {
    agents.push_back(
        std::make_unique<DdprunProcess>(job.agent({"--nproc_per_node=2"}, {"mark", dir}), kEnv));
  }
  ASSERT_TRUE(eventually([&] { return world_running(dir, 6, 0); })) << "ranks 0-5 of 6";
  EXPECT_EQ(markers(dir, 6).size(), 6u) << "no rank twice";
  for (auto& a : agents) ::kill(a->pid(), SIGTERM);
  for (auto& a : agents) EXPECT_EQ(a->wait(), 128 + SIGTERM) << a->err();
}

TEST(Elastic, LateJoinerScalesUpWithoutARestart) {
  Job job;
  job.nnodes = "2:3";
  std::string dir = make_temp_dir();
  DdprunProcess a(job.agent({}, {"mark", dir}, true), kEnv);
  DdprunProcess b(job.agent({}, {"mark", dir}, false), kEnv);
  ASSERT_TRUE(eventually([&] { return world_running(dir, 2, 0); }));
  DdprunProcess c(job.agent({}, {"mark", dir}, false), kEnv);
  ASSERT_TRUE(eventually([&] { return world_running(dir, 3, 0); }))
      << "3 nodes, restart count still 0";
  for (auto* p : {&a, &b, &c}) ::kill(p->pid(), SIGTERM);
  for (auto* p : {&a, &b, &c}) EXPECT_EQ(p->wait(), 128 + SIGTERM);
}

// Preflight's clock check reads the rendezvous host's clock through its store (here the
// same clock: an offset within the round trip).
TEST(Elastic, EachAgentMeasuresItsClockAgainstTheRendezvousHost) {
  Job job;
  job.nnodes = "2";
  DdprunProcess a(job.agent({"--log_level=debug", "--no_tracking"}, {"exit", "0"}, true), kEnv);
  DdprunProcess b(job.agent({"--log_level=debug", "--no_tracking"}, {"exit", "0"}, false), kEnv);
  ASSERT_EQ(a.wait(), 0) << a.err();
  ASSERT_EQ(b.wait(), 0) << b.err();
  std::smatch m;
  std::string err = b.err();
  std::regex said("preflight: clock: (-?[0-9]+) ms to the rendezvous host's");
  ASSERT_TRUE(std::regex_search(err, m, said)) << err;
  EXPECT_LE(std::abs(std::stoi(m[1].str())), 100);
}

TEST(Elastic, KilledAgentScalesDown) {
  Job job;
  job.nnodes = "2:3";
  std::string dir = make_temp_dir();
  DdprunProcess a(job.agent({}, {"mark", dir}, true), kEnv);
  DdprunProcess b(job.agent({}, {"mark", dir}, false), kEnv);
  DdprunProcess c(job.agent({}, {"mark", dir}, false), kEnv);
  ASSERT_TRUE(eventually([&] { return world_running(dir, 3, 0); }));
  ::kill(c.pid(), SIGKILL);
  ASSERT_TRUE(eventually([&] { return world_running(dir, 2, 0); }))
      << "survivors go on with 2 nodes\n"
      << a.err() << b.err();
  for (auto* p : {&a, &b}) ::kill(p->pid(), SIGTERM);
  for (auto* p : {&a, &b}) EXPECT_EQ(p->wait(), 128 + SIGTERM);
  EXPECT_NE((a.err() + b.err()).find("lost node(s) 127.0.0.1 (pid "), std::string::npos) << a.err();
}

// A node frozen past the heartbeat timeout (SIGSTOP of its agent: the workers go on) is
// dropped; the job goes on without it, the store cuts its stale worker off, and when
// it resumes it stops and leaves with a message and its own exit status.
TEST(Elastic, FrozenNodeIsDroppedFencedAndLeaves) {
  Job job;
  job.nnodes = "1:2";
  std::string dir = make_temp_dir();
  auto agent = [&](bool host) {
    std::vector<std::string> worker{store_worker_binary(), "poll", dir};
    return job.agent_running({"--no_python", "--no_tracking"}, worker, host);
  };
  DdprunProcess a(agent(true), kEnv);  // 127.0.0.1: group rank 0, the workers' store
  job.local_addr = "127.0.0.2";
  DdprunProcess b(agent(false), kEnv);
  ASSERT_TRUE(eventually([&] { return world_running(dir, 2, 0); }))
      << a.err_so_far() << b.err_so_far();
  ::kill(b.pid(), SIGSTOP);
  ASSERT_TRUE(eventually([&] { return world_running(dir, 1, 0); }))
      << "the job goes on with one node\n"
      << a.err_so_far();
  // B's worker, still running in the old world, is cut off by the store it used.
  EXPECT_TRUE(eventually([&] { return std::filesystem::exists(dir + "/cut.w2.r1"); }))
      << a.err_so_far();
  ::kill(b.pid(), SIGCONT);
  EXPECT_EQ(b.wait(), 123) << b.err();
  EXPECT_NE(b.err().find("this node was dropped from the job"), std::string::npos) << b.err();
  EXPECT_FALSE(world_running(dir, 2, 1)) << "no new world of two: B left";
  ::kill(a.pid(), SIGTERM);
  EXPECT_EQ(a.wait(), 128 + SIGTERM) << a.err();
  // B's worker's, and A's own stopped worker's if the store had not yet read its close.
  EXPECT_TRUE(std::regex_search(
      a.err(), std::regex("closed [12] store connection\\(s\\) of workers from an earlier round")))
      << a.err();
}

// The agent hosting the rendezvous store freezes for several heartbeat limits (its
// workers run on): nobody can write or read a heartbeat meanwhile, so nobody is judged
// by that time. Once it thaws, both nodes go on in the same world of two.
TEST(Elastic, FrozenRendezvousHostIsWaitedForNotDropped) {
  Job job;
  job.nnodes = "1:2";
  job.conf =
      "last_call_timeout=0.3,keep_alive_interval=0.5,keep_alive_max_attempt=2,join_timeout=20,"
      "read_timeout=60";  // a freeze well within the store's timeout
  std::string dir = make_temp_dir();
  DdprunProcess a(job.agent({"--no_tracking", "--max_restarts=3"}, {"mark", dir}, true), kEnv);
  job.local_addr = "127.0.0.2";
  DdprunProcess b(job.agent({"--no_tracking", "--max_restarts=3"}, {"mark", dir}, false), kEnv);
  ASSERT_TRUE(eventually([&] { return world_running(dir, 2, 0); }))
      << a.err_so_far() << b.err_so_far();
  ::kill(a.pid(), SIGSTOP);
  std::this_thread::sleep_for(std::chrono::seconds(3));  // 3 limits (0.5 s x 2)
  ::kill(a.pid(), SIGCONT);
  std::this_thread::sleep_for(std::chrono::seconds(2));  // time for a wrong judgement
  EXPECT_TRUE(markers(dir, 1).empty()) << "no world of one\n" << a.err_so_far() << b.err_so_far();
  EXPECT_FALSE(world_running(dir, 2, 1)) << "no restart\n" << a.err_so_far() << b.err_so_far();
  for (auto* p : {&a, &b}) ::kill(p->pid(), SIGTERM);
  for (auto* p : {&a, &b}) EXPECT_EQ(p->wait(), 128 + SIGTERM) << p->err();
  EXPECT_EQ(b.err().find("membership changed"), std::string::npos) << b.err();
  EXPECT_EQ(a.err().find("dropped"), std::string::npos) << a.err();
}

// Two nodes running `script` (a shell script, with the job's folder as $0): node 0
// (127.0.0.1) hosts the rendezvous store, node 1 (127.0.0.2) joins it. Each rank
// touches up.<rank> first; returned once both have.
struct TwoNodes {
  TwoNodes(const char* script, const std::string& dir, std::vector<std::string> flags = {}) {
    Job job;
    job.nnodes = "2";
    flags.insert(flags.end(), {"--no_tracking", "--no_python"});
    std::vector<std::string> worker{"/bin/sh", "-c",
                                    std::string("touch \"$0/up.$RANK\"; ") + script, dir};
    a = std::make_unique<DdprunProcess>(job.agent_running(flags, worker, true), kEnv);
    job.local_addr = "127.0.0.2";
    b = std::make_unique<DdprunProcess>(job.agent_running(flags, worker, false), kEnv);
    up = eventually([&] {
      return std::filesystem::exists(dir + "/up.0") && std::filesystem::exists(dir + "/up.1");
    });
  }
  std::unique_ptr<DdprunProcess> a, b;
  bool up = false;
};

// The job fails on the node hosting the rendezvous store while another node cannot
// read its end yet (its agent frozen; on a loaded machine, merely slow): a node hears
// of the end by a wait, then reads it. The host stays until that node has left, which
// then names the job's cause, not a lost store.
TEST(Elastic, ANodeSlowToReadTheEndStillHearsTheJobsCause) {
  std::string dir = make_temp_dir();
  // Node 0's rank fails once "go" is there (the job has no restarts); node 1's sleeps.
  TwoNodes n(
      "if [ \"$RANK\" = 0 ]; then while [ ! -f \"$0/go\" ]; do sleep 0.01; done; "
      "exit 3; fi; sleep 30",
      dir);
  ASSERT_TRUE(n.up) << n.a->err_so_far() << n.b->err_so_far();
  ::kill(n.b->pid(), SIGSTOP);
  std::ofstream(dir + "/go") << "";
  // Time for the host to end the job: a host that left at once is gone by then.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ::kill(n.b->pid(), SIGCONT);
  EXPECT_EQ(n.b->wait(), 3) << n.b->err();
  EXPECT_NE(n.b->err().find("the job failed: rank 0 (local_rank 0) on node 0"), std::string::npos)
      << n.b->err();
  EXPECT_EQ(n.b->err().find("lost the rendezvous store"), std::string::npos) << n.b->err();
  EXPECT_EQ(n.a->wait(), 3) << n.a->err();
}

// A stop signal to a node whose ranks finished, while it waits for the others, stops
// the job everywhere, as in any other phase: the others are told (and the host, which
// this node is, stays until they have left), instead of losing its store.
TEST(Elastic, ASignalWhileWaitingForTheOthersToFinishStopsThemToo) {
  std::string dir = make_temp_dir();
  // Node 0's rank finishes; node 0 says so once it has waited a second for node 1.
  TwoNodes n("if [ \"$RANK\" = 1 ]; then sleep 30; fi", dir, {"--straggler_warning=1"});
  ASSERT_TRUE(n.up) << n.a->err_so_far() << n.b->err_so_far();
  ASSERT_TRUE(eventually([&] {
    return n.a->err_so_far().find("node(s) 1 (") != std::string::npos;
  })) << n.a->err_so_far();
  ::kill(n.a->pid(), SIGTERM);
  EXPECT_EQ(n.a->wait(), 128 + SIGTERM) << n.a->err();
  EXPECT_NE(n.a->err().find("received SIGTERM while waiting for the other nodes to finish"),
            std::string::npos)
      << n.a->err();
  EXPECT_EQ(n.b->wait(), 128 + SIGTERM) << n.b->err();
  EXPECT_NE(n.b->err().find("the job was stopped: node 0"), std::string::npos) << n.b->err();
}

// With a job token, the rendezvous store admits only the agents that prove it: one with
// another token is refused by name, one with the same token joins.
TEST(Elastic, OnlyAgentsWithTheJobTokenGetIn) {
  Job job;
  job.nnodes = "1:2";
  std::string dir = make_temp_dir();
  auto env = [](const std::string& token) {
    auto e = kEnv;
    e["DDPRUN_JOB_TOKEN"] = token;
    return e;
  };
  DdprunProcess a(job.agent({}, {"mark", dir}, true), env("the-job's"));
  ASSERT_TRUE(eventually([&] { return world_running(dir, 1, 0); })) << a.err_so_far();
  EXPECT_EQ(a.err_so_far().find("no job token"), std::string::npos) << a.err_so_far();
  Finished intruder = run_ddprun(job.agent({}, {"mark", dir}, false), env("a guess"));
  EXPECT_NE(intruder.code, 0);
  EXPECT_NE(intruder.err.find("refused this node's job token"), std::string::npos) << intruder.err;
  DdprunProcess b(job.agent({}, {"mark", dir}, false), env("the-job's"));
  EXPECT_TRUE(eventually([&] { return world_running(dir, 2, 0); })) << b.err_so_far();
  for (auto* p : {&a, &b}) ::kill(p->pid(), SIGTERM);
  for (auto* p : {&a, &b}) EXPECT_EQ(p->wait(), 128 + SIGTERM) << p->err();
  EXPECT_NE(a.err().find("refused a connection from 127.0.0.1"), std::string::npos) << a.err();
}

TEST(Elastic, AJobWithoutATokenSaysSoOnce) {
  Job job;
  job.nnodes = "1:2";
  Finished f = run_ddprun(job.agent({}, {"exit", "0"}, true), kEnv);
  EXPECT_EQ(f.code, 0) << f.err;
  EXPECT_NE(f.err.find("warning: no job token"), std::string::npos) << f.err;
}

TEST(Elastic, TooFewNodesLeftFailsWithACount) {
  Job job;
  job.nnodes = "2:2";
  std::string dir = make_temp_dir();
  DdprunProcess a(job.agent({}, {"mark", dir}, true), kEnv);
  DdprunProcess b(job.agent({}, {"mark", dir}, false), kEnv);
  ASSERT_TRUE(eventually([&] { return world_running(dir, 2, 0); }));
  ::kill(b.pid(), SIGKILL);
  EXPECT_EQ(a.wait(), 1);
  EXPECT_NE(a.err().find("1 node(s) left, at least 2 needed"), std::string::npos) << a.err();
}

TEST(Elastic, WorkerFailureRestartsEveryNode) {
  Job job;
  job.nnodes = "2";
  auto args =
      job.agent({"--nproc_per_node=2", "--max_restarts=2", "--tee=1"}, {"fail_before", "1", "4"});
  DdprunProcess a(args, kEnv);
  DdprunProcess b(args, kEnv);
  ASSERT_EQ(a.wait(), 0) << a.err();
  ASSERT_EQ(b.wait(), 0) << b.err();
  for (const auto* out : {&a.out(), &b.out()}) {
    // Both workers of every node ran attempt 1 (attempt 0's may be stopped before printing).
    EXPECT_NE(out->find("[default0]:attempt 1"), std::string::npos) << *out;
    EXPECT_NE(out->find("[default1]:attempt 1"), std::string::npos) << *out;
    EXPECT_EQ(out->find(":attempt 2"), std::string::npos) << *out;
  }
}

// A long job restarts many times: the rendezvous store keeps each round's keys only
// while a node may still need them, so it does not grow with the restarts (a key per
// state change and per round did, about 7 a restart).
TEST(Elastic, RestartsDoNotGrowTheRendezvousStore) {
  Job job;
  job.nnodes = "2";
  std::string dir = make_temp_dir();
  std::string counts = dir + "/keys";
  auto args = job.agent_running(
      {"--nproc_per_node=1", "--max_restarts=40", "--no_python"},
      {store_worker_binary(), "count_keys", std::to_string(job.port), counts, "40"});
  DdprunProcess a(args, kEnv);
  DdprunProcess b(args, kEnv);
  int ca = a.wait();
  int cb = b.wait();
  // Both agents' words either way: one's failure may be the other's doing.
  ASSERT_EQ(ca, 0) << a.err() << "\nthe other agent (exit " << cb << "):\n" << b.err();
  ASSERT_EQ(cb, 0) << b.err() << "\nthe other agent:\n" << a.err();
  std::map<int, int> keys;  // attempt -> keys in the store
  std::ifstream in(counts);
  for (int attempt, n; in >> attempt >> n;) keys[attempt] = n;
  ASSERT_TRUE(keys.count(20) && keys.count(40)) << "attempts counted: " << keys.size();
  // The same rounds' worth of keys at both points (give or take the current round's few).
  EXPECT_LE(keys[40], keys[20] + 8) << "keys at attempt 20: " << keys[20];
}

TEST(Elastic, ExhaustedBudgetEndsEveryNodeWithTheRootCause) {
  Job job;
  job.nnodes = "2";
  auto args = job.agent({"--nproc_per_node=2", "--max_restarts=1"}, {"fail_rank", "3", "5"});
  DdprunProcess a(args, kEnv);
  DdprunProcess b(args, kEnv);
  int ca = a.wait();
  int cb = b.wait();
  EXPECT_EQ(ca, 5) << a.err();
  EXPECT_EQ(cb, 5) << b.err();
  std::string all = a.err() + b.err();
  EXPECT_NE(all.find("rank      : 3 (local_rank: 1)"), std::string::npos) << all;
  EXPECT_NE(all.find("the job failed: rank 3 (local_rank 1) on node 1"), std::string::npos) << all;
}

TEST(Elastic, SigtermToOneAgentStopsTheWholeJob) {
  Job job;
  job.nnodes = "2";
  std::string dir = make_temp_dir();
  DdprunProcess a(job.agent({}, {"mark", dir}), kEnv);
  DdprunProcess b(job.agent({}, {"mark", dir}), kEnv);
  ASSERT_TRUE(eventually([&] { return world_running(dir, 2, 0); }));
  ::kill(b.pid(), SIGTERM);
  EXPECT_EQ(b.wait(), 128 + SIGTERM) << b.err();
  EXPECT_EQ(a.wait(), 128 + SIGTERM) << a.err();
  EXPECT_NE(a.err().find("received SIGTERM"), std::string::npos) << a.err();
}

TEST(Elastic, TooFewNodesTimesOut) {
  Job job;
  job.nnodes = "2:4";
  job.conf = "join_timeout=0.5,last_call_timeout=0.1";
  Finished f = run_ddprun(job.agent({}, {"exit", "0"}), kEnv);
  EXPECT_EQ(f.code, 1);
  EXPECT_NE(f.err.find("1 node(s) joined, at least 2 needed"), std::string::npos) << f.err;
}

// Enough nodes joined, but the last call for more (30 s by default) outlasts the join
// timeout: the error says so, not that more nodes were needed.
TEST(Elastic, ALastCallLongerThanTheJoinTimeoutIsNamed) {
  Job job;
  job.nnodes = "1:2";
  job.conf = "join_timeout=1";
  Finished f = run_ddprun(job.agent({}, {"exit", "0"}), kEnv);
  EXPECT_EQ(f.code, 1);
  EXPECT_NE(f.err.find("1 node(s) joined (at least 1 needed), still in the last call for more ("),
            std::string::npos)
      << f.err;
  EXPECT_NE(f.err.find("give a join_timeout longer than the last call"), std::string::npos)
      << f.err;
}

// A node that does not host the store, whose endpoint nobody listens on (the host not
// up yet, or a wrong address): after a few seconds it says what it waits for and why,
// where it once waited in silence until the join timeout.
TEST(Elastic, AWaitForTheStoresHostIsSaid) {
  Job job;
  job.nnodes = "1:2";
  job.conf = "is_host=0,join_timeout=4";
  Finished f = run_ddprun(job.agent({}, {"exit", "0"}), kEnv);
  EXPECT_EQ(f.code, 1);
  EXPECT_NE(f.err.find("waiting for the rendezvous store at 127.0.0.1:" +
                       std::to_string(job.port) + " ("),
            std::string::npos)
      << f.err;
  EXPECT_NE(f.err.find("s left, --rdzv_conf join_timeout): Connection refused"),
            std::string::npos)
      << f.err;
}

// Something that takes connections on the endpoint and never answers: the agent says so
// a moment in, gives up at the join timeout (shorter than the read timeout), and names
// why it did not host the store itself.
TEST(Elastic, ASilentPeerOnTheEndpointIsNamedAndTheJoinTimeoutHolds) {
  Job job;
  job.nnodes = "1:2";
  job.conf = "join_timeout=3,read_timeout=600";
  int silent = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(silent, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(job.port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(silent, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(silent, 8), 0);  // the kernel accepts; nothing ever answers
  Finished f = run_ddprun(job.agent({}, {"exit", "0"}), kEnv);
  ::close(silent);
  EXPECT_EQ(f.code, 1);
  std::string store = "the store at 127.0.0.1:" + std::to_string(job.port);
  EXPECT_NE(f.err.find(store + " accepted the connection but has not answered for 2 s"),
            std::string::npos)
      << f.err;
  EXPECT_NE(f.err.find(store + " accepted the connection but did not answer within 3 s"),
            std::string::npos)
      << f.err;
  EXPECT_NE(f.err.find("(this node does not host the store: cannot listen on 127.0.0.1:" +
                       std::to_string(job.port) + ": Address already in use)"),
            std::string::npos)
      << f.err;
}

TEST(Elastic, LosingTheRendezvousHostStopsTheOthers) {
  Job job;
  job.nnodes = "2";
  std::string dir = make_temp_dir();
  DdprunProcess host(job.agent({}, {"mark", dir}, true), kEnv);
  DdprunProcess other(job.agent({}, {"mark", dir}, false), kEnv);
  ASSERT_TRUE(eventually([&] { return world_running(dir, 2, 0); }));
  ::kill(host.pid(), SIGKILL);
  EXPECT_EQ(other.wait(), 1);
  EXPECT_NE(other.err().find("127.0.0.1:" + std::to_string(job.port)), std::string::npos)
      << other.err();
}

}  // namespace
}  // namespace ddprun::test

namespace ddprun::test {
namespace {

// Rank 0's node finishes first; rank 1 then fails once: the restart must bring the
// finished node back too, and both succeed in attempt 1.
const char* kFinishThenFail =
    "echo $TORCHELASTIC_RESTART_COUNT > \"$0/ran.$RANK.$TORCHELASTIC_RESTART_COUNT\"; "
    "if [ \"$RANK\" = 1 ] && [ \"$TORCHELASTIC_RESTART_COUNT\" = 0 ]; then "
    "while [ ! -f \"$0/ran.0.0\" ]; do sleep 0.01; done; sleep 0.2; exit 3; fi";

void expect_both_nodes_rerun(const std::vector<std::vector<std::string>>& agents,
                             const std::string& dir) {
  std::vector<std::unique_ptr<DdprunProcess>> procs;
  for (const auto& a : agents) procs.push_back(std::make_unique<DdprunProcess>(a, kEnv));
  for (auto& p : procs) EXPECT_EQ(p->wait(), 0) << p->err();
  EXPECT_TRUE(std::filesystem::exists(dir + "/ran.0.1")) << "the finished node ran again";
  EXPECT_TRUE(std::filesystem::exists(dir + "/ran.1.1"));
}

TEST(Elastic, NodeThatFinishedRestartsWhenAPeerFailsLater) {
  Job job;
  job.nnodes = "2";
  std::string dir = make_temp_dir();
  auto a = job.agent({"--max_restarts=1"}, {}, true);
  auto b = job.agent({"--max_restarts=1"}, {}, false);
  for (auto* v : {&a, &b}) {
    v->back() = "/bin/sh";  // a shell script instead of the test worker
    v->insert(v->end(), {"-c", kFinishThenFail, dir});
  }
  expect_both_nodes_rerun({a, b}, dir);
}

TEST(StaticMultiNodeRestart, NodeThatFinishedRestartsWhenAPeerFailsLater) {
  int port = free_port();
  std::string dir = make_temp_dir();
  auto agent = [&](int node) {
    return std::vector<std::string>{"--nnodes=2",
                                    "--node_rank=" + std::to_string(node),
                                    "--master_port=" + std::to_string(port),
                                    "--max_restarts=1",
                                    "--no_python",
                                    "/bin/sh",
                                    "-c",
                                    kFinishThenFail,
                                    dir};
  };
  expect_both_nodes_rerun({agent(0), agent(1)}, dir);
}

}  // namespace
}  // namespace ddprun::test

namespace ddprun::test {
namespace {

TEST(Elastic, LateAgentForAFinishedRunExitsWithAClearMessage) {
  Job job;
  job.nnodes = "2";
  DdprunProcess host(job.agent({}, {"exit", "0"}, true), kEnv);
  // Hold a connection to the store so the host lingers after the job.
  int held = -1;
  ASSERT_TRUE(eventually([&] { return (held = connect_loopback(job.port)) >= 0; }));
  DdprunProcess other(job.agent({}, {"exit", "0"}, false), kEnv);
  ASSERT_EQ(other.wait(), 0) << other.err();
  Finished late = run_ddprun(job.agent({}, {"exit", "0"}, false), kEnv);
  EXPECT_EQ(late.code, 1);
  EXPECT_NE(late.err.find("has already finished"), std::string::npos) << late.err;
  ::close(held);
  EXPECT_EQ(host.wait(), 0) << host.err();
}

}  // namespace
}  // namespace ddprun::test
