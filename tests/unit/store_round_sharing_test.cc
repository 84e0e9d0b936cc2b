// StoreRound's exchanges between the nodes of a round (gather, share_max, publish) on
// an in-memory store, and a gather too large for one reply on a real TCPStore.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/tcpstore/tcp_store_client.h"
#include "store/tcpstore/tcp_store_server.h"
#include "tests/fakes/forwarding_loop_store.h"
#include "tests/unit/store_round_fixture.h"

namespace ddprun::testing {
namespace {

TEST_F(StoreRoundTest, ShareMaxGivesEveryNodeTheLargestNumberShared) {
  auto a = sharing_node(0, store_);
  auto b = sharing_node(1, store_);
  EXPECT_EQ(share(*a, "longest", 200), 200) << "nobody else has shared yet";
  EXPECT_EQ(share(*b, "longest", 900), 900);
  EXPECT_EQ(share(*a, "longest", 300), 900);
  EXPECT_EQ(store_.get("ddprun/test/round/0/max/longest", std::chrono::milliseconds(0)), "900")
      << "one key holds the round's largest; a smaller number leaves it";
  EXPECT_EQ(share(*a, "longest", 1500), 1500);
  EXPECT_EQ(store_.get("ddprun/test/round/0/max/longest", std::chrono::milliseconds(0)), "1500");
  EXPECT_EQ(share(*b, "longest", 900), 1500) << "read back, not written again";
  // Names are apart.
  EXPECT_EQ(share(*b, "other", 5), 5);
}

TEST_F(StoreRoundTest, ShareMaxSkipsWhatIsNotANumberAndSurvivesALostStore) {
  auto a = sharing_node(0, store_);
  store_.set("ddprun/test/round/0/max/longest", "garbage");
  EXPECT_EQ(share(*a, "longest", 42), 42);
  EXPECT_EQ(store_.get("ddprun/test/round/0/max/longest", std::chrono::milliseconds(0)), "42")
      << "what is not a number is replaced";
  LostStore lost;
  EXPECT_EQ(share(*sharing_node(0, lost), "longest", 50), 50);
}

// A node that needs nobody's part only shares its own: it waits for and reads nothing
// (every node gathering every node's part costs N squared), and the node that gathers
// has it.
TEST_F(StoreRoundTest, ANodeThatOnlySharesItsPartReadsNothing) {
  ReadCountingStore store;
  StoreRound::Options o = options(0);
  o.connect = [&store] { return on_loop(store); };
  StoreRound a(io_, clock_, o);
  auto b = sharing_node(1, store);
  b->gather("endpoint", "b:9000", std::chrono::seconds(5), {});
  run_a_while();
  EXPECT_EQ(store.get("ddprun/test/round/0/gather/endpoint/1", std::chrono::seconds(1)), "b:9000");
  EXPECT_EQ(store.reads("ddprun/test/round/0/gather/endpoint/0"), 0) << "it read a's part";
  std::vector<std::string> gathered;
  a.gather("endpoint", "a:9000", std::chrono::seconds(5),
           [&gathered](const std::vector<std::string>& parts) { gathered = parts; });
  run_a_while();
  EXPECT_EQ(gathered, (std::vector<std::string>{"a:9000", "b:9000"}));
}

// A store whose wait brings the values (as etcd's read and watch do).
class ValuesWithTheWait : public testing::ForwardingLoopStore {
 public:
  using ForwardingLoopStore::ForwardingLoopStore;
  bool wait_brings_values() const override { return true; }
};

// Where the store's wait brings the parts (etcd), the node that gathers reads each part
// once, in the wait, not again after it (16 KiB to 256 KiB per node for a hang).
TEST_F(StoreRoundTest, PartsTheWaitBroughtAreNotReadAgain) {
  ReadCountingStore store;
  StoreRound::Options o = options(0);
  o.connect = [&store] { return std::make_unique<ValuesWithTheWait>(on_loop(store)); };
  StoreRound a(io_, clock_, o);
  auto b = sharing_node(1, store);
  b->gather("hang", "b's stacks", std::chrono::seconds(5), {});
  std::vector<std::string> gathered;
  a.gather("hang", "a's stacks", std::chrono::seconds(5),
           [&gathered](const std::vector<std::string>& parts) { gathered = parts; });
  run_a_while();
  EXPECT_EQ(gathered, (std::vector<std::string>{"a's stacks", "b's stacks"}));
  EXPECT_EQ(store.reads("ddprun/test/round/0/gather/hang/1"), 1) << "b's part read again";
}

// A node that needs its neighbour's part waits for and reads that part only: the
// answer comes though another node never shares (the link check's wait costs the
// same at any size).
TEST_F(StoreRoundTest, ANodeGathersOnlyThePartsItNamesAndWaitsForNoOther) {
  ReadCountingStore store;
  auto node = [&](int group_rank) {
    StoreRound::Options o = options(group_rank);
    o.info.group_world_size = 3;
    o.connect = [&store] { return on_loop(store); };
    return std::make_unique<StoreRound>(io_, clock_, std::move(o));
  };
  auto b = node(1);
  auto c = node(2);
  std::vector<std::string> gathered;
  b->gather_from("ready", "b", {2}, std::chrono::seconds(5),
                 [&gathered](const std::vector<std::string>& parts) { gathered = parts; });
  run_a_while();
  EXPECT_TRUE(gathered.empty()) << "answered before c shared";
  c->gather("ready", "c", std::chrono::seconds(5), {});
  run_a_while();
  EXPECT_EQ(gathered, (std::vector<std::string>{"c"}));  // node 0 never shared
  EXPECT_EQ(store.reads("ddprun/test/round/0/gather/ready/0"), 0) << "it read node 0's part";
  std::vector<std::string> with_mine;
  b->gather_from("ready", "b", {1, 2}, std::chrono::seconds(5),
                 [&with_mine](const std::vector<std::string>& parts) { with_mine = parts; });
  run_a_while();
  EXPECT_EQ(with_mine, (std::vector<std::string>{"b", "c"}));
}

// Parts too large together for one reply of the store (TCPStore answers at most
// 64 MiB at once) are all gathered: they are read a few at a time. A hang's reports
// from a few hundred nodes with large stacks are that much.
TEST_F(StoreRoundTest, PartsTooLargeTogetherForOneReplyAreAllGathered) {
  store::TcpStoreServer server("127.0.0.1", 0);
  const int nodes = 10;
  const std::string part(7 * 1024 * 1024, 'p');  // 70 MiB in all
  std::vector<std::unique_ptr<StoreRound>> round;
  for (int k = 0; k < nodes; ++k) {
    StoreRound::Options o = options(k);
    o.info.group_world_size = nodes;
    o.connect = [port = server.port()] {
      return on_loop(std::make_unique<store::TcpStoreClient>("127.0.0.1", port));
    };
    round.push_back(std::make_unique<StoreRound>(io_, clock_, std::move(o)));
  }
  for (int k = 1; k < nodes; ++k) round[k]->gather("hang", part, std::chrono::seconds(60), {});
  std::optional<std::vector<std::string>> gathered;
  round[0]->gather("hang", part, std::chrono::seconds(60),
                   [&gathered](const std::vector<std::string>& parts) { gathered = parts; });
  for (int i = 0; i < 400 && !gathered; ++i) run_a_while();
  ASSERT_TRUE(gathered);
  ASSERT_EQ(gathered->size(), static_cast<size_t>(nodes));
  for (int k = 0; k < nodes; ++k) EXPECT_EQ(gathered->at(k).size(), part.size()) << "node " << k;
}

// What each node published last, read back on the loop by group rank ("" from a node
// that has not).
TEST_F(StoreRoundTest, WhatTheNodesPublishedIsReadBackByGroupRank) {
  StoreRound::Options o = options(0);
  o.connect = [this] { return on_loop(store_); };
  StoreRound a(io_, clock_, o);
  auto b = sharing_node(1, store_);
  a.publish("window", "first");
  a.publish("window", "mine");
  b->publish("window", "theirs");
  std::vector<std::vector<std::string>> read;
  auto keep = [&read](std::vector<std::string> v) { read.push_back(std::move(v)); };
  a.read_published("window", {0, 1}, keep);
  run_a_while();
  a.read_published("window", {1}, keep);
  run_a_while();
  a.read_published("other", {0, 1}, keep);
  run_a_while();
  ASSERT_EQ(read.size(), 3u);
  EXPECT_EQ(read[0], (std::vector<std::string>{"mine", "theirs"}));
  EXPECT_EQ(read[1], (std::vector<std::string>{"theirs"}));
  EXPECT_EQ(read[2], (std::vector<std::string>{"", ""}));
}

}  // namespace
}  // namespace ddprun::testing
