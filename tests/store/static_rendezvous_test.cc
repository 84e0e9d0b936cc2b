// The static rendezvous against what a store may hold: another program's bytes where a
// node's worker count belongs are one clear error, not a crash.
#include "rendezvous/handlers/static_rendezvous.h"

#include <gtest/gtest.h>

#include "tests/helpers/run_task.h"
#include "tests/helpers/threads.h"

namespace ddprun::rendezvous {
namespace {

using namespace std::chrono_literals;

// Node 0 of a job of `nnodes` on this host.
RendezvousParams node0_of(int nnodes) {
  RendezvousParams p;
  p.min_nodes = p.max_nodes = nnodes;
  p.node_rank = 0;
  p.master_addr = "127.0.0.1";
  p.master_port = 0;  // any free port
  p.join_timeout = 5s;
  return p;
}

TEST(StaticRendezvous, AWorkerCountThatIsNotANumberIsNamed) {
  StaticRendezvous node0(node0_of(2));
  // What "node 1" wrote: not a count.
  node0.loop_store().store().set(static_round_prefix(0) + "node/1", "four");
  try {
    testing::run_task(node0.next_rendezvous(0, 2));
    FAIL() << "joined with a worker count of 'four'";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("holds 'four' at ddprun/static/round/0/node/1, not a "
                                         "worker count"),
              std::string::npos)
        << e.what();
  }
}

// Node 0 alone reads every node's worker count; it writes each node's first rank and the
// world size, and each other node reads its own: two keys, not N (every node reading
// every node's count made a start of N nodes cost N squared).
TEST(StaticRendezvous, NodeZeroCountsTheRanksAndEachOtherNodeReadsItsOwn) {
  StaticRendezvous node0(node0_of(3));
  store::Store& held = node0.loop_store().store();
  held.set(static_round_prefix(0) + "node/1", "3");  // as nodes 1 and 2 wrote them
  held.set(static_round_prefix(0) + "node/2", "5");
  RendezvousInfo first = testing::run_task(node0.next_rendezvous(0, 2));
  EXPECT_EQ(first.first_rank, 0);
  EXPECT_EQ(first.world_size, 10);
  EXPECT_EQ(held.get(static_round_prefix(0) + "ranks/1", 1s), "2 10");
  EXPECT_EQ(held.get(static_round_prefix(0) + "ranks/2", 1s), "5 10");
  RendezvousParams p = node0_of(3);
  p.node_rank = 2;
  p.master_port = node0.port();
  StaticRendezvous node2(p);
  RendezvousInfo last = testing::run_task(node2.next_rendezvous(0, 5));
  EXPECT_EQ(last.first_rank, 5);
  EXPECT_EQ(last.world_size, 10);
  EXPECT_EQ(last.group_rank, 2);
  // What else may sit there (another program, a node 0 of another kind): named.
  held.set(static_round_prefix(0) + "ranks/2", "five");
  try {
    testing::run_task(node2.next_rendezvous(0, 5));
    FAIL() << "took 'five' for its ranks";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("holds 'five' at ddprun/static/round/0/ranks/2, not this "
                                         "node's ranks"),
              std::string::npos)
        << e.what();
  }
}

// A single node is the whole job: its rounds ask the store nothing (no key of the
// rendezvous written), yet clear what the last attempt's workers left there.
TEST(StaticRendezvous, ASingleNodesRoundAsksTheStoreNothing) {
  StaticRendezvous node(node0_of(1));
  node.loop_store().store().set("worker_key", "from attempt 0");
  ASSERT_TRUE(node.loop_store().store().check({"worker_key"}));  // a SET has no answer: this one does
  RendezvousInfo info = testing::run_task(node.next_rendezvous(1, 4));
  EXPECT_EQ(info.round, 1);
  EXPECT_EQ(info.restart_count, 1);
  EXPECT_EQ(info.world_size, 4);
  EXPECT_EQ(info.master_port, node.port());
  EXPECT_FALSE(node.loop_store().store().check({static_round_prefix(1) + "node/0"})) << "a request was made";
  EXPECT_FALSE(node.loop_store().store().check({static_round_prefix(1) + "ready"}));
  EXPECT_FALSE(node.loop_store().store().check({"worker_key"})) << "the last attempt's keys stayed";
}

// The end of a single node's job (as --standalone runs it) stops its store: the store's
// thread ends then, not when the rendezvous is destroyed, which would wait for it.
TEST(StaticRendezvous, ASingleNodesStoreStopsAsTheJobEnds) {
  StaticRendezvous node(node0_of(1));
  testing::run_task(node.next_rendezvous(0, 1));
  ASSERT_EQ(test::await_thread_count(1, "ddprun-store"), 1) << "its thread names itself";
  CancelSignal cancel;
  testing::run_task(node.finish_job(cancel));
  EXPECT_EQ(test::await_thread_count(0, "ddprun-store"), 0)
      << "the store still serves after the job's end";
}

}  // namespace
}  // namespace ddprun::rendezvous
