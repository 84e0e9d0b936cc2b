// Static multi-node jobs: two ddprun processes on 127.0.0.1 as two nodes. Node 0
// hosts the store; ranks, restarts and stops are shared across the nodes.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>

#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "tests/blackbox/ddprun_process.h"

namespace ddprun::test {
namespace {

std::vector<std::string> node_args(int node, int port, std::vector<std::string> extra) {
  std::vector<std::string> args{"--nnodes=2", "--node_rank=" + std::to_string(node),
                                "--master_addr=127.0.0.1", "--master_port=" + std::to_string(port)};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::vector<std::string> worker(std::vector<std::string> mode) {
  std::vector<std::string> args{"--no_python", test_worker_binary()};
  args.insert(args.end(), mode.begin(), mode.end());
  return args;
}

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Values of `key` in tee'd "env" output, one per worker.
std::vector<std::string> values_of(const std::string& out, const std::string& key) {
  std::vector<std::string> v;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    auto pos = line.find("]:" + key + "=");
    if (pos != std::string::npos) v.push_back(line.substr(pos + 3 + key.size()));
  }
  return v;
}

const std::map<std::string, std::optional<std::string>> kEnv{{"OMP_NUM_THREADS", "1"}};

// The straggler warning, job-wide, where the nodes have ranks but no ids.
TEST(StaticMultiNode, ANodeWhoseRanksFinishedNamesTheNodeStillRunning) {
  int port = free_port();
  DdprunProcess late(
      concat(node_args(1, port, {"--straggler_warning=1", "--no_python", "--no_tracking"}),
             {"/bin/sleep", "4"}),
      kEnv);
  DdprunProcess done(
      concat(node_args(0, port, {"--straggler_warning=1", "--no_python", "--no_tracking"}),
             {"/bin/true"}),
      kEnv);
  EXPECT_EQ(done.wait(std::chrono::seconds(60)), 0) << done.err();
  EXPECT_EQ(late.wait(std::chrono::seconds(60)), 0) << late.err();
  EXPECT_NE(done.err().find("node(s) 1 still running 1 s after every rank of this node exited 0"),
            std::string::npos)
      << done.err();
}

TEST(StaticMultiNode, RanksAreUniqueAndContiguous) {
  int port = free_port();
  DdprunProcess n1(concat(node_args(1, port, {"--nproc_per_node=3", "--tee=1"}), worker({"env"})),
                   kEnv);
  DdprunProcess n0(concat(node_args(0, port, {"--nproc_per_node=1", "--tee=1"}), worker({"env"})),
                   kEnv);
  ASSERT_EQ(n0.wait(), 0) << n0.err();
  ASSERT_EQ(n1.wait(), 0) << n1.err();
  auto r0 = values_of(n0.out(), "RANK");
  auto r1 = values_of(n1.out(), "RANK");
  EXPECT_EQ(std::set<std::string>(r0.begin(), r0.end()), (std::set<std::string>{"0"}));
  EXPECT_EQ(std::set<std::string>(r1.begin(), r1.end()), (std::set<std::string>{"1", "2", "3"}));
  for (const auto* out : {&n0.out(), &n1.out()}) {
    for (const auto& v : values_of(*out, "WORLD_SIZE")) EXPECT_EQ(v, "4");
    for (const auto& v : values_of(*out, "GROUP_WORLD_SIZE")) EXPECT_EQ(v, "2");
    for (const auto& v : values_of(*out, "MASTER_PORT")) EXPECT_EQ(v, std::to_string(port));
    for (const auto& v : values_of(*out, "TORCHELASTIC_USE_AGENT_STORE")) EXPECT_EQ(v, "True");
  }
  for (const auto& v : values_of(n1.out(), "GROUP_RANK")) EXPECT_EQ(v, "1");
}

// Preflight's clock check: the other nodes read node 0's clock through its store (here
// the same clock: an offset within the round trip).
TEST(StaticMultiNode, EachNodeMeasuresItsClockAgainstNodeZero) {
  int port = free_port();
  DdprunProcess n1(concat(node_args(1, port, {"--log_level=debug", "--no_tracking"}),
                          worker({"exit", "0"})),
                   kEnv);
  DdprunProcess n0(concat(node_args(0, port, {"--no_tracking"}), worker({"exit", "0"})), kEnv);
  ASSERT_EQ(n0.wait(), 0) << n0.err();
  ASSERT_EQ(n1.wait(), 0) << n1.err();
  std::smatch m;
  std::string err = n1.err();
  ASSERT_TRUE(std::regex_search(err, m, std::regex("preflight: clock: (-?[0-9]+) ms to the "
                                                   "rendezvous host's")))
      << err;
  EXPECT_LE(std::abs(std::stoi(m[1].str())), 100);
}

TEST(StaticMultiNode, MissingNodeTimesOutNamingIt) {
  int port = free_port();
  Finished f = run_ddprun(
      concat(node_args(0, port, {"--rdzv_conf=join_timeout=0.3"}), worker({"exit", "0"})), kEnv);
  EXPECT_NE(f.code, 0);
  EXPECT_NE(f.err.find("node rank(s) 1 of 2 did not join within 300 ms"), std::string::npos)
      << f.err;
}

TEST(StaticMultiNode, UnreachableNodeZeroIsNamed) {
  int port = free_port();
  Finished f = run_ddprun(
      concat(node_args(1, port, {"--rdzv_conf=join_timeout=0.3"}), worker({"exit", "0"})), kEnv);
  EXPECT_NE(f.code, 0);
  EXPECT_NE(f.err.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << f.err;
}

// Node 0 not up (or a wrong --master_addr): node 1 says that it waits and why a few
// seconds in, where it waited in silence until the join timeout (600 s by default).
TEST(StaticMultiNode, AWaitForNodeZerosStoreIsSaid) {
  int port = free_port();
  Finished f = run_ddprun(
      concat(node_args(1, port, {"--rdzv_conf=join_timeout=4", "--preflight=none"}),
             worker({"exit", "0"})),
      kEnv);
  EXPECT_NE(f.code, 0);
  EXPECT_NE(f.err.find("waiting for node rank 0's store at 127.0.0.1:" + std::to_string(port) +
                       " ("),
            std::string::npos)
      << f.err;
  EXPECT_NE(f.err.find("s left, --rdzv_conf join_timeout): Connection refused"), std::string::npos)
      << f.err;
}

// Node 1, started on `port`, is stopped while it waits for node 0's store: the wait is
// the agent loop's own, so the signal ends it at once, not the join timeout. No
// preflight: a signal during the node's checks ends those instead (another line). The
// signal goes once the node said (a debug line) that its wait began, and `waiting`
// (when given) holds: one sent as soon as it was caught could come before (a full
// run under ASan saw "received SIGTERM; stopping 0 worker(s)").
void expect_a_signal_ends_the_wait_for_node_zero(int port,
                                                 const std::function<bool()>& waiting = {}) {
  DdprunProcess n1(concat(node_args(1, port,
                                    {"--no_tracking", "--preflight=none", "--log_level=debug",
                                     "--rdzv_conf=join_timeout=600"}),
                          worker({"exit", "0"})),
                   kEnv);
  ASSERT_TRUE(eventually([&] {
    return n1.err_so_far().find("agent: reaching the rendezvous") != std::string::npos;
  })) << n1.err_so_far();
  if (waiting) {
    ASSERT_TRUE(eventually(waiting));
  }
  ::kill(n1.pid(), SIGTERM);
  EXPECT_EQ(n1.wait(std::chrono::seconds(30)), 128 + SIGTERM) << n1.err();
  EXPECT_NE(n1.err().find("received SIGTERM while waiting for the other nodes"), std::string::npos)
      << n1.err();
  EXPECT_EQ(n1.err().find("stopping 0 worker(s)"), std::string::npos) << "one line, not two\n"
                                                                        << n1.err();
}

// Nothing listens there yet: connecting is retried on the loop.
TEST(StaticMultiNode, SignalWhileNodeZerosStoreIsNotUpEndsTheWait) {
  expect_a_signal_ends_the_wait_for_node_zero(free_port());
}

// Something listens and accepts (the kernel's backlog) but never answers.
TEST(StaticMultiNode, SignalWhileNodeZerosStoreNeverAnswersEndsTheWait) {
  int port = 0;
  int fd = listen_on_loopback(port);
  ASSERT_GE(fd, 0);
  // The node's connection waits in the backlog: it is in its wait for node 0.
  expect_a_signal_ends_the_wait_for_node_zero(port, [fd] {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;
  });
  ::close(fd);
}

TEST(StaticMultiNode, FailureOnOneNodeStopsTheOther) {
  int port = free_port();
  std::string dir = make_temp_dir();
  // Rank 3 (node 1) fails; every other rank hangs until stopped.
  DdprunProcess n0(
      concat(node_args(0, port, {"--nproc_per_node=2"}), worker({"fail_rank", "3", "5"})), kEnv);
  DdprunProcess n1(
      concat(node_args(1, port, {"--nproc_per_node=2"}), worker({"fail_rank", "3", "5"})), kEnv);
  EXPECT_EQ(n1.wait(), 5) << n1.err();
  EXPECT_EQ(n0.wait(), 5) << n0.err();
  EXPECT_NE(n1.err().find("rank      : 3 (local_rank: 1)"), std::string::npos) << n1.err();
  EXPECT_NE(n0.err().find("rank 3 (local_rank 1) on node 1"), std::string::npos) << n0.err();
}

// Node 0's rank fails while node 1 cannot read the job's end yet (its agent frozen; on
// a loaded machine, merely slow): node 1 hears of it by a wait, then reads it. Node 0's
// store stays until node 1 has left, which then names the job's cause, not a lost store.
TEST(StaticMultiNode, ANodeSlowToReadTheEndStillHearsTheJobsCause) {
  int port = free_port();
  std::string dir = make_temp_dir();
  auto node = [&](int n, const std::string& script) {
    return concat(node_args(n, port, {"--no_tracking", "--no_python"}),
                  {"/bin/sh", "-c", "touch \"$0/up.$RANK\"; " + script, dir});
  };
  DdprunProcess n0(node(0, "while [ ! -f \"$0/go\" ]; do sleep 0.01; done; exit 3"), kEnv);
  DdprunProcess n1(node(1, "sleep 30"), kEnv);
  ASSERT_TRUE(eventually([&] {
    return std::filesystem::exists(dir + "/up.0") && std::filesystem::exists(dir + "/up.1");
  })) << n0.err_so_far()
      << n1.err_so_far();
  ::kill(n1.pid(), SIGSTOP);
  std::ofstream(dir + "/go") << "";
  // Time for node 0 to end the job: a node 0 that left at once is gone by then.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ::kill(n1.pid(), SIGCONT);
  EXPECT_EQ(n1.wait(), 3) << n1.err();
  EXPECT_NE(n1.err().find("the job failed: rank 0 (local_rank 0) on node 0"), std::string::npos)
      << n1.err();
  EXPECT_EQ(n1.err().find("lost the rendezvous store"), std::string::npos) << n1.err();
  EXPECT_EQ(n0.wait(), 3) << n0.err();
}

TEST(StaticMultiNode, RestartsAreSharedAcrossNodes) {
  int port = free_port();
  auto args = [&](int node) {
    return concat(node_args(node, port, {"--nproc_per_node=2", "--max_restarts=2", "--tee=1"}),
                  worker({"fail_before", "1", "4"}));
  };
  DdprunProcess n0(args(0), kEnv);
  DdprunProcess n1(args(1), kEnv);
  ASSERT_EQ(n0.wait(), 0) << n0.err();
  ASSERT_EQ(n1.wait(), 0) << n1.err();
  for (const auto* out : {&n0.out(), &n1.out()}) {
    EXPECT_NE(out->find(":attempt 1"), std::string::npos) << *out;
    EXPECT_EQ(out->find(":attempt 2"), std::string::npos) << "one restart was enough";
  }
}

TEST(StaticMultiNode, SigtermOnOneNodeStopsTheWholeJob) {
  int port = free_port();
  std::string dir = make_temp_dir();
  DdprunProcess n0(concat(node_args(0, port, {}), worker({"hang", dir})), kEnv);
  DdprunProcess n1(concat(node_args(1, port, {}), worker({"hang", dir})), kEnv);
  ASSERT_TRUE(eventually(
      [&] { return !read_file(dir + "/0.pids").empty() && !read_file(dir + "/1.pids").empty(); }));
  ::kill(n1.pid(), SIGTERM);
  EXPECT_EQ(n1.wait(), 128 + SIGTERM);
  EXPECT_EQ(n0.wait(), 128 + SIGTERM) << n0.err();
  EXPECT_NE(n0.err().find("node 1"), std::string::npos) << n0.err();
}

TEST(StaticMultiNode, SignalWhileWaitingForTheOthersCancelsTheJoin) {
  int port = free_port();
  std::string runs = make_temp_dir();
  DdprunProcess n0(concat(node_args(0, port, {"--rdzv_id=alone", "--tracking_dir", runs}),
                          worker({"exit", "0"})),
                   kEnv);
  // Node 0 hosts the store, so it is in the join (node 1 never comes) once it listens.
  int probe = -1;
  ASSERT_TRUE(eventually([&] { return (probe = connect_loopback(port)) >= 0; }));
  ::close(probe);
  // The run is made once the store listens, a moment later: wait for it, so that the
  // signal finds it (a signal before would end a job that had no run yet).
  ASSERT_TRUE(eventually([&] { return !read_file(runs + "/alone/run.db").empty(); }));
  ::kill(n0.pid(), SIGTERM);
  EXPECT_EQ(n0.wait(std::chrono::seconds(20)), 128 + SIGTERM) << n0.err();
  EXPECT_NE(n0.err().find("received SIGTERM while waiting for the other nodes"), std::string::npos)
      << n0.err();
  Finished show = run_ddprun({"runs", "show", "alone", "--tracking_dir", runs});
  EXPECT_NE(show.out.find("status:   killed (exit code 143)"), std::string::npos)
      << show.out << show.err << n0.err();
}

// With a job token, node 0's store takes only nodes that prove it; their workers, plain
// PyTorch-protocol clients, are served as before (across a restart too).
TEST(StaticMultiNode, OnlyNodesWithTheJobTokenGetIn) {
  int port = free_port();
  auto env = [](const std::string& token) {
    auto e = kEnv;
    e["DDPRUN_JOB_TOKEN"] = token;
    return e;
  };
  auto args = [&](int node) {
    return concat(
        node_args(node, port, {"--nproc_per_node=2", "--max_restarts=1", "--no_tracking"}),
        {"--no_python", store_worker_binary(), "leak_check"});
  };
  DdprunProcess n0(args(0), env("the-job's"));
  Finished intruder = run_ddprun(args(1), env("a guess"));
  EXPECT_NE(intruder.code, 0);
  EXPECT_NE(intruder.err.find("refused this node's job token"), std::string::npos) << intruder.err;
  DdprunProcess n1(args(1), env("the-job's"));
  EXPECT_EQ(n0.wait(), 0) << n0.err();
  EXPECT_EQ(n1.wait(), 0) << n1.err();
  EXPECT_EQ(n0.err().find("no job token"), std::string::npos) << n0.err();
  EXPECT_NE(n0.err().find("refused a connection from 127.0.0.1"), std::string::npos) << n0.err();
}

TEST(StaticMultiNode, AJobWithoutATokenSaysSo) {
  int port = free_port();
  DdprunProcess n0(concat(node_args(0, port, {"--no_tracking"}), worker({"exit", "0"})), kEnv);
  DdprunProcess n1(concat(node_args(1, port, {"--no_tracking"}), worker({"exit", "0"})), kEnv);
  EXPECT_EQ(n0.wait(), 0) << n0.err();
  EXPECT_EQ(n1.wait(), 0) << n1.err();
  EXPECT_NE(n0.err().find("warning: no job token: whoever reaches the master address"),
            std::string::npos)
      << n0.err();
}

}  // namespace
}  // namespace ddprun::test
