// StoreRound (the round protocol over the agents' shared store) on an in-memory store.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "common/error.h"
#include "rendezvous/round/store_round.h"
#include "store/memory_store.h"
#include "tests/unit/store_round_fixture.h"

namespace ddprun::testing {
namespace {

// The node that ends a round after beginning the next says where that round is, as
// its start left it: the others, told, join it without reading where it is.
TEST_F(StoreRoundTest, TheEndSaysWhereTheRoundBegunBeforeItIs) {
  std::string began;
  StoreRound::Options o = options(0);
  o.connect = [this] { return on_loop(store_); };
  o.start_next = [&began](bool, std::set<std::string>, CancelSignal&) -> Task<void> {
    began = "1.5.3.0.0";
    co_return;
  };
  o.next_round_hint = [&began] { return began; };
  StoreRound ending(io_, clock_, std::move(o));
  std::string told;
  StoreRound::Options other = options(1);
  other.connect = [this] { return on_loop(store_); };
  other.on_next_round = [&told](const std::string& hint) { told = hint; };
  StoreRound watching(io_, clock_, std::move(other));
  std::optional<rendezvous::RoundEnd> seen;
  watching.watch_end([&seen](rendezvous::RoundEnd e) { seen = std::move(e); },
                     [](const std::string&) {});
  ending.start_next_round(true, {});
  std::optional<rendezvous::RoundEnd> answered;
  ending.end({rendezvous::RoundEnd::Kind::kRestart, 1, "rank 0 exited with 1"},
             [&answered](rendezvous::RoundEnd e) { answered = std::move(e); });
  run_a_while();
  ASSERT_TRUE(seen);
  ASSERT_TRUE(answered);
  EXPECT_EQ(answered->next_round, "1.5.3.0.0");
  EXPECT_EQ(seen->reason, "rank 0 exited with 1");
  EXPECT_EQ(told, "1.5.3.0.0") << "the watching node's joiner is told";
}

// An end that began no round says none, though its node began this one (the last
// round it began): a final end does not point the others at the round it ends.
TEST_F(StoreRoundTest, AnEndThatBeganNoRoundSaysNone) {
  StoreRound::Options o = options(0);
  o.connect = [this] { return on_loop(store_); };
  o.next_round_hint = [] { return std::string("1.5.3.0.0"); };  // began this round
  StoreRound ending(io_, clock_, std::move(o));
  std::optional<rendezvous::RoundEnd> answered;
  ending.end({rendezvous::RoundEnd::Kind::kFinal, 1, "rank 0 exited with 1"},
             [&answered](rendezvous::RoundEnd e) { answered = std::move(e); });
  run_a_while();
  ASSERT_TRUE(answered);
  EXPECT_EQ(answered->next_round, "");
  EXPECT_EQ(answered->reason, "rank 0 exited with 1");
}

// Each node learns whether the round's end is its own: the writer of the end that won
// (its store's answer settles it), not a node whose end lost, nor one that only saw it.
TEST_F(StoreRoundTest, EachNodeLearnsWhetherItWroteTheRoundsEnd) {
  std::map<int, std::optional<bool>> mine;  // by group rank: the last word each node had
  std::vector<std::unique_ptr<StoreRound>> nodes;
  for (int rank = 0; rank < 3; ++rank) {
    StoreRound::Options o = options(rank);
    o.connect = [this] { return on_loop(store_); };
    o.on_end_writer = [&mine, rank](const rendezvous::RoundEnd& end,
                                    std::optional<bool> this_node) {
      EXPECT_EQ(end.reason, "rank 0 exited with 1");
      mine[rank] = this_node;
    };
    nodes.push_back(std::make_unique<StoreRound>(io_, clock_, std::move(o)));
    nodes.back()->watch_end([](rendezvous::RoundEnd) {}, [](const std::string&) {});
  }
  nodes[0]->end({rendezvous::RoundEnd::Kind::kFinal, 1, "rank 0 exited with 1"},
                [](rendezvous::RoundEnd) {});
  run_a_while();
  nodes[1]->end({rendezvous::RoundEnd::Kind::kFinal, 1, "rank 2 exited with 1"},
                [](rendezvous::RoundEnd) {});
  run_a_while();
  EXPECT_EQ(mine, (std::map<int, std::optional<bool>>{{0, true}, {1, false}, {2, false}}));
}

// A store that holds and watches keys but refuses every compare-and-set.
class RefusingStore : public MemoryStore {
 public:
  std::string compare_set(const std::string&, const std::string&, const std::string&) override {
    throw Error("refused");
  }
};

// A node whose own end got no answer does not know who wrote the end it saw (it may
// have been its own): it says so, and the watch's word does not stand.
TEST_F(StoreRoundTest, ANodeWhoseEndGotNoAnswerDoesNotKnowWhoWroteTheEnd) {
  RefusingStore refusing;
  std::vector<std::optional<bool>> said;
  StoreRound::Options o = options(0);
  o.connect = [&refusing] { return on_loop(refusing); };
  o.on_end_writer = [&said](const rendezvous::RoundEnd&, std::optional<bool> this_node) {
    said.push_back(this_node);
  };
  StoreRound node(io_, clock_, std::move(o));
  node.watch_end([](rendezvous::RoundEnd) {}, [](const std::string&) {});
  refusing.set("ddprun/test/round/0/over", "final|1|rank 0 exited with 1");
  run_a_while();
  std::optional<rendezvous::RoundEnd> told;
  node.end({rendezvous::RoundEnd::Kind::kFinal, 1, "rank 0 exited with 1"},
           [&told](rendezvous::RoundEnd e) { told = std::move(e); });
  run_a_while();
  ASSERT_TRUE(told) << "its own end stands";
  EXPECT_EQ(said, (std::vector<std::optional<bool>>{false, std::nullopt}));
}

TEST_F(StoreRoundTest, UnfinishedNamesTheNodesNotMarkedDone) {
  auto unfinished = [this](StoreRound& node) {
    std::vector<int> out{-1};
    node.unfinished([&out](std::vector<int> u) { out = std::move(u); });
    run_a_while();  // a read on the loop
    return out;
  };
  auto a = sharing_node(0, store_);
  EXPECT_EQ(unfinished(*a), (std::vector<int>{0, 1}));
  a->finish_node([] {}, [](const std::string&) {});
  run_a_while();  // counted, then marked
  EXPECT_EQ(unfinished(*a), std::vector<int>{1});
  EXPECT_EQ(store_.get("ddprun/test/round/0/done", std::chrono::milliseconds(0)), "1");
  EXPECT_FALSE(store_.check({"ddprun/test/round/0/all_done"})) << "node 1 has not finished";
  auto b = sharing_node(1, store_);
  bool all_done = false;
  b->finish_node([&all_done] { all_done = true; }, [](const std::string&) {});
  run_a_while();
  EXPECT_TRUE(store_.check({"ddprun/test/round/0/all_done"})) << "set by the last to finish";
  EXPECT_TRUE(all_done);
  LostStore lost;
  EXPECT_TRUE(unfinished(*sharing_node(0, lost)).empty()) << "nothing is known";
}

// Where the state outlives the agents (etcd), the node that sets "all_done" closes the
// run just before: every node waits for "all_done" before it leaves, so none leaves
// before the run is closed, and only that node closes it. A close that fails is said,
// and "all_done" set all the same.
TEST_F(StoreRoundTest, TheLastToFinishClosesTheRunBeforeItSetsAllDone) {
  const std::string all_done_key = options(0).prefix + "all_done";
  for (bool close_fails : {false, true}) {
    MemoryStore store;                         // every wait on it ends before it goes
    std::vector<std::pair<int, bool>> closes;  // (group rank, "all_done" there already)
    auto node = [&](int group_rank) {
      StoreRound::Options o = options(group_rank);
      o.connect = [&store] { return on_loop(store); };
      o.close_run = [&, group_rank](CancelSignal&) -> Task<void> {
        closes.emplace_back(group_rank, store.check({all_done_key}));
        if (close_fails) throw StoreError("etcd is gone");
        co_return;
      };
      return std::make_unique<StoreRound>(io_, clock_, std::move(o));
    };
    auto a = node(0);
    auto b = node(1);
    bool a_done = false, b_done = false;
    a->finish_node([&a_done] { a_done = true; }, [](const std::string&) {});
    run_a_while();
    EXPECT_TRUE(closes.empty()) << "b has not finished";
    b->finish_node([&b_done] { b_done = true; }, [](const std::string&) {});
    run_a_while();
    EXPECT_EQ(closes, (std::vector<std::pair<int, bool>>{{1, false}}))
        << "b, the last to count, closes the run once, before all_done";
    EXPECT_TRUE(store.check({all_done_key}));
    EXPECT_TRUE(a_done && b_done);
  }
}

// The members' liveness keys, read on the round's own connection every interval: the
// judgment gets what they held, and names who is gone.
TEST_F(StoreRoundTest, TheMembersLivenessKeysAreReadEachIntervalAndJudged) {
  store_.set("hb/a", "7");
  StoreRound::Options o = options(0);
  o.connect = [this] { return on_loop(store_); };
  o.heartbeat_interval = std::chrono::milliseconds(100);
  o.liveness_keys = {"hb/a", "hb/b"};
  std::vector<std::vector<std::optional<std::string>>> read;
  o.dead_members = [&read](const std::vector<std::optional<std::string>>& values) {
    read.push_back(values);
    return values[1] ? std::vector<std::string>{} : std::vector<std::string>{"b"};
  };
  StoreRound round(io_, clock_, std::move(o));
  std::vector<std::string> dead;
  std::string lost;
  round.watch_members([&](std::vector<std::string> d) { dead = std::move(d); },
                      [&](std::string why) { lost = std::move(why); });
  store_.set("hb/b", "1");
  clock_.advance(std::chrono::milliseconds(100));
  run_a_while();
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0], (std::vector<std::optional<std::string>>{"7", "1"}));
  EXPECT_TRUE(dead.empty());
  store_.delete_key("hb/b");
  clock_.advance(std::chrono::milliseconds(100));
  run_a_while();
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(dead, std::vector<std::string>{"b"});
  EXPECT_TRUE(lost.empty()) << lost;
}

// A member that marked itself done may leave before this node learns that every node
// is: its liveness gone is no lost member then.
TEST_F(StoreRoundTest, AMemberThatFinishedIsNotLostWhenItsLivenessGoes) {
  MemoryStore store;
  StoreRound::Options o = options(0);
  o.watched = {{1, "b"}, {2, "c"}};  // group rank 0 watches the others
  o.info.group_world_size = 3;
  o.connect = [&store] { return on_loop(store); };
  o.heartbeat_interval = std::chrono::milliseconds(100);
  o.liveness_keys = {"hb/b", "hb/c"};
  bool c_gone = false;
  o.dead_members = [&c_gone](const std::vector<std::optional<std::string>>&) {
    return c_gone ? std::vector<std::string>{"b", "c"} : std::vector<std::string>{"b"};
  };
  store.set(o.prefix + "done/1", "1");  // b finished
  StoreRound round(io_, clock_, std::move(o));
  std::vector<std::string> dead;
  round.watch_members([&](std::vector<std::string> d) { dead = std::move(d); }, [](std::string) {});
  clock_.advance(std::chrono::milliseconds(100));
  run_a_while();
  EXPECT_TRUE(dead.empty()) << "b finished: " << dead.at(0);
  c_gone = true;
  clock_.advance(std::chrono::milliseconds(100));
  run_a_while();
  EXPECT_EQ(dead, std::vector<std::string>{"c"}) << "watched again; c did not finish";
}

// Where the last to finish set no "all_done" (an agent of an earlier version marks
// itself but counts nothing) and then left, a finished node reads every mark once and
// its wait ends: it does not wait forever.
TEST_F(StoreRoundTest, AFinishedNodeWhoseLastPeerCountedNothingEndsOnTheMarks) {
  bool b_gone = false;
  StoreRound::Options o = watching_b(b_gone);
  o.connect = [this] { return on_loop(store_); };  // store_ outlives the wait left
  std::vector<bool> closes;  // "all_done" there already, at each close of the run
  o.close_run = [&](CancelSignal&) -> Task<void> {
    closes.push_back(store_.check({options(0).prefix + "all_done"}));
    co_return;
  };
  StoreRound round(io_, clock_, std::move(o));
  bool all_done = false;
  finish_watching_b(round, all_done);
  EXPECT_FALSE(all_done) << "b has not finished";
  store_.set(options(0).prefix + "done/1", "1");  // b, of an earlier version, finished
  b_gone = true;                                 // and left
  clock_.advance(std::chrono::milliseconds(100));
  run_a_while();
  EXPECT_TRUE(store_.check({options(0).prefix + "all_done"})) << "the others are told";
  EXPECT_TRUE(all_done);
  EXPECT_EQ(closes, std::vector<bool>{false}) << "the run is closed once, before all_done";
}

// A member left once it saw "all_done", which has not reached this node yet (its wait
// is slow): this node reads "all_done" and its wait ends, without reading every node's
// mark (N keys, read by each node the word reaches late: N x N).
TEST_F(StoreRoundTest, AFinishedNodeWhoseLastPeerLeftReadsAllDoneNotEveryMark) {
  ReadCountingStore store;
  int connections = 0;
  bool b_gone = false;
  StoreRound::Options o = watching_b(b_gone);
  // The wait for "all_done" looks at store_, where the word never comes (store_
  // outlives the wait left).
  o.connect = [&] { return connections++ == 0 ? on_loop(store) : on_loop(store_); };
  StoreRound round(io_, clock_, std::move(o));
  bool all_done = false;
  finish_watching_b(round, all_done);
  ASSERT_EQ(connections, 2) << "its requests' connection, then its wait's";
  const std::string at = options(0).prefix;
  store.set(at + "done/1", "1");  // b counted last, set "all_done" and left
  store.add(at + "done", 1);
  store.set(at + "all_done", "1");
  b_gone = true;
  clock_.advance(std::chrono::milliseconds(100));
  run_a_while();
  EXPECT_TRUE(all_done);
  EXPECT_EQ(store.reads(at + "all_done"), 1);
  EXPECT_EQ(store.reads(at + "done/0"), 0) << "every node's mark was read";
}

// Every node marked itself, yet nobody set "all_done" (the last to finish counted
// another way: an agent of another version) and nobody left: group rank 0 reads the
// marks each interval of its wait and sets it, so no node waits for ever. Another
// node reads nothing but its wait.
TEST_F(StoreRoundTest, GroupRankZeroSetsAllDoneWhereEveryNodeMarkedAndNobodySetIt) {
  auto waiting_node = [this](int group_rank) {
    StoreRound::Options o = options(group_rank);
    o.watched = {{1 - group_rank, group_rank == 0 ? "b" : "a"}};
    o.connect = [this] { return on_loop(store_); };  // store_ outlives the wait left
    o.heartbeat_interval = std::chrono::milliseconds(100);
    o.liveness_keys = {"hb"};
    o.dead_members = [](const std::vector<std::optional<std::string>>&) {
      return std::vector<std::string>{};
    };
    return std::make_unique<StoreRound>(io_, clock_, std::move(o));
  };
  auto b = waiting_node(1);
  bool b_done = false;
  b->watch_members([](std::vector<std::string>) {}, [](std::string) {});
  b->finish_node([&b_done] { b_done = true; }, [](const std::string&) {});
  run_a_while();
  store_.set(options(0).prefix + "done", "5");  // counted another way: nobody reaches 2
  auto a = waiting_node(0);
  bool a_done = false;
  a->watch_members([](std::vector<std::string>) {}, [](std::string) {});
  a->finish_node([&a_done] { a_done = true; }, [](const std::string&) {});
  run_a_while();
  EXPECT_FALSE(store_.check({options(0).prefix + "all_done"}));
  EXPECT_FALSE(a_done || b_done) << "no interval has passed";
  clock_.advance(std::chrono::milliseconds(100));
  run_a_while();
  EXPECT_TRUE(store_.check({options(0).prefix + "all_done"}));
  EXPECT_TRUE(a_done);
  EXPECT_TRUE(b_done) << "its wait on all_done ended with it";
}

TEST_F(StoreRoundTest, ALivenessReadThatFailsIsTheStoreLost) {
  StoreRound::Options o = options(0);
  o.connect = [] { return on_loop(std::make_unique<LostStore>()); };
  o.heartbeat_interval = std::chrono::milliseconds(100);
  o.liveness_keys = {"hb/b"};
  o.dead_members = [](const std::vector<std::optional<std::string>>&) {
    return std::vector<std::string>{};
  };
  StoreRound round(io_, clock_, std::move(o));
  std::string lost;
  round.watch_members([](std::vector<std::string>) {}, [&](std::string why) { lost = std::move(why); });
  clock_.advance(std::chrono::milliseconds(100));
  run_a_while();
  EXPECT_EQ(lost, "lost the rendezvous store at memory (connection reset)");
}

}  // namespace
}  // namespace ddprun::testing
