// The elastic rendezvous executor over MemoryStore: how nodes announce themselves,
// who writes them in, and how each learns its seat without reading the whole state.
#include "rendezvous/join/dynamic_joiner.h"
#include "tests/fakes/forwarding_loop_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "tests/fakes/log_capture.h"
#include "tests/unit/joiner_cluster.h"

namespace ddprun::rendezvous {
namespace {

using namespace joiner_testing;

// A node's view of the store that counts its reads of the state (the whole state,
// which names every node).
class CountingStore : public testing::ForwardingLoopStore {
 public:
  explicit CountingStore(store::LoopStore& inner) : ForwardingLoopStore(inner) {}
  Task<std::optional<std::vector<std::string>>> wait_for(std::vector<std::string> keys,
                                                         std::chrono::milliseconds timeout,
                                                         CancelSignal& cancel) override {
    note_wait(keys, timeout);
    return inner().wait_for(std::move(keys), timeout, cancel);
  }
  Task<bool> wait_until_there(std::vector<std::string> keys, std::chrono::milliseconds timeout,
                              CancelSignal& cancel) override {
    note_wait(keys, timeout);
    return inner().wait_until_there(std::move(keys), timeout, cancel);
  }
  void note_wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
    int64_t none = -1;
    if (keys.size() == 1 && keys[0].find("/epoch/") != std::string::npos)
      first_round_wait_ms.compare_exchange_strong(none, timeout.count());
  }
  Task<std::vector<std::optional<std::string>>> get_now(std::vector<std::string> keys,
                                                        CancelSignal& cancel) override {
    if (keys.size() == 1 && keys[0].find("/folder") != std::string::npos) ++folder_reads;
    for (const auto& k : keys) state_reads += k == "ddprun/c10d/test/state" ? 1 : 0;
    auto names = [&keys](const std::string& part) {
      return std::any_of(keys.begin(), keys.end(), [&part](const std::string& k) {
        return k.find(part) != std::string::npos;
      });
    };
    if (names("/seat/"))
      ++(names("ddprun/c10d/test/head") ? seat_reads_with_head : seat_reads_alone);
    if (names("ddprun/c10d/test/head")) ++head_reads;
    return inner().get_now(std::move(keys), cancel);
  }
  Task<std::string> compare_set(std::string key, std::string expected, std::string desired,
                                CancelSignal& cancel) override {
    state_writes += key == "ddprun/c10d/test/state" ? 1 : 0;
    return inner().compare_set(std::move(key), std::move(expected), std::move(desired), cancel);
  }
  Task<void> multi_set(std::vector<std::string> keys, std::vector<std::string> values,
                       CancelSignal& cancel) override {
    if (drop_multi_set) co_return;  // as if the writer died right after its write
    co_await inner().multi_set(std::move(keys), std::move(values), cancel);
  }
  int state_reads = 0;
  int head_reads = 0;
  int seat_reads_with_head = 0;  // a seat read in the request that reads the head
  int seat_reads_alone = 0;
  int folder_reads = 0;  // who folds, asked after a wait in which nothing was written
  int state_writes = 0;  // compare-and-sets of the state
  std::atomic<int64_t> first_round_wait_ms{-1};  // an announced node's first wait for its round
  bool drop_multi_set = false;
};

// The first node to announce itself for a forming round writes in the nodes that
// announce themselves after it: here "b" and "c" only announce (and never write), and
// "a" completes the round with them.
TEST(DynamicJoiner, TheFirstToAnnounceWritesInThoseAnnouncedAfterIt) {
  Cluster c({3, 3, 1000});
  DynamicState got;
  std::thread a = c.first_to_join("a", got);
  c.store.add("ddprun/c10d/test/joining/0/n", 2);
  c.store.set("ddprun/c10d/test/joining/0/2", "4 b");
  c.store.set("ddprun/c10d/test/joining/0/3", "1 c");
  a.join();
  EXPECT_TRUE(got.complete);
  EXPECT_EQ(got.participants, (std::map<std::string, int>{{"a", 2}, {"b", 4}, {"c", 1}}));
  // It wrote each member's seat, then `seated`.
  RoundSeat b = RoundSeat::decode(c.store.get("ddprun/c10d/test/round/0/seat/b", 1s));
  EXPECT_EQ(b.group_rank, 1);
  EXPECT_EQ(b.first_rank, 2);
  EXPECT_EQ(b.world_size, 7);
  EXPECT_EQ(b.host, "a");
  EXPECT_EQ(b.watched, (std::vector<std::pair<int, std::string>>{{0, "a"}, {2, "c"}}));
  EXPECT_EQ(c.store.get("ddprun/c10d/test/round/0/seated", 1s), "3");
}

// A node that announced itself reads its own seat once the round formed, not the state
// that names every node, and in the request that reads the head which says so.
TEST(DynamicJoiner, ALaterNodeReadsItsSeatNotTheState) {
  Cluster c({2, 2, 1000});
  DynamicState first;
  std::thread a = c.first_to_join("a", first);
  CountingStore counted(*c.view);
  DynamicJoiner b = c.joiner(counted);
  JoinedRound got = take_seat(b, "b", 3, 5s);
  a.join();
  EXPECT_EQ(counted.state_reads, 0);
  EXPECT_GE(counted.seat_reads_with_head, 1);
  EXPECT_EQ(counted.seat_reads_alone, 0);
  EXPECT_FALSE(got.state);
  EXPECT_EQ(got.round, 0);
  EXPECT_EQ(got.seat, seat_in(first, {"a", "b"}, 1));
  EXPECT_EQ(got.seat.first_rank, 2);
  EXPECT_EQ(got.seat.world_size, 5);
}

// Where no seat comes (the node that completed the round died before it wrote them),
// a node reads the state after a wait, and joins all the same.
TEST(DynamicJoiner, ANodeWhoseSeatNeverCameReadsTheState) {
  Cluster c({2, 2, 1000});
  JoinedRound first;
  std::thread a([&] {
    CountingStore dies(*c.view);
    dies.drop_multi_set = true;
    DynamicJoiner j = c.joiner(dies);
    first = take_seat(j, "a", 2, 5s);
  });
  c.wait_for_participants(1);
  DynamicJoiner b = c.joiner();
  JoinedRound got = take_seat(b, "b", 3, 5s);
  a.join();
  ASSERT_TRUE(first.state) << "the first wrote the state: it read it";
  ASSERT_TRUE(got.state);
  EXPECT_FALSE(c.store.check({"ddprun/c10d/test/round/0/seated"}));
  EXPECT_EQ(got.seat, seat_in(*first.state, {"a", "b"}, 1));
}

// A restart: "a" begins round 1 and joins it; "b", told where round 1 is (by round 0's
// end, which carries a's hint) or not (`hint` empty or no hint), joins after a
// announced itself. Returns b's reads of the head.
int head_reads_of_a_told_node(const std::string& hint) {
  Cluster c({2, 2, 1000});
  c.join_all({"a", "b"});
  DynamicJoiner a = c.joiner();
  start_next(a, 0, true, {});
  std::thread first([&] {
    CancelSignal cancel;
    EXPECT_EQ(run_task(a.join("a", 2, 1, 5s, cancel)).round, 1);
  });
  for (int i = 0; i < 5000 && !c.store.check({"ddprun/c10d/test/joining/1/1"}); ++i) {
    std::this_thread::sleep_for(1ms);
  }
  CountingStore counted(*c.view);
  DynamicJoiner b = c.joiner(counted);
  b.told_next_round(hint == "a's" ? a.next_round_hint() : hint);
  CancelSignal cancel;
  JoinedRound got = run_task(b.join("b", 2, 1, 5s, cancel));
  first.join();
  EXPECT_EQ(got.round, 1);
  EXPECT_EQ(got.seat.group_rank, 1);
  EXPECT_EQ(counted.state_reads, 0);
  return counted.head_reads;
}

// Told where the next round is, a node announces itself at once: it reads the head
// only once woken, with its seat.
TEST(DynamicJoiner, ANodeToldWhereTheNextRoundIsJoinsWithoutReadingItFirst) {
  EXPECT_EQ(head_reads_of_a_told_node("a's"), 1);
  EXPECT_EQ(head_reads_of_a_told_node(""), 2) << "not told: it reads where the round is";
  EXPECT_EQ(head_reads_of_a_told_node("1.x.3.0.0"), 2) << "not a hint: read as not told";
  EXPECT_EQ(head_reads_of_a_told_node("0.2.2.0.0"), 2) << "an earlier round's: read";
}

// The node that began the next round (its worker failed) and reads the whole state
// (the primary agent) joins it after another node folded it: it reads the round as
// that node completed it. Its own write that began the round is long past by then;
// taken for the state, it made the node write the completed round again (the same
// bytes, so taken for a win: the version moved, everyone's seats were written again
// and every wait woken; 70 ms of the store at 16,384 simulated nodes).
// `told`: the node is told where the round is (by its own end of the round before, as
// an agent's end watch tells it) and reads no head before it announces itself.
void the_node_that_began_the_round_joins_it(bool told) {
  Cluster c({2, 2, 1000});
  c.join_all({"a", "b"});
  CountingStore counted(*c.view);
  DynamicJoiner a = c.joiner(counted);
  start_next(a, 0, true, {});
  ASSERT_EQ(counted.state_writes, 1) << "the round begun";
  if (told) a.told_next_round(a.next_round_hint());
  std::thread folder([&] {
    DynamicJoiner b = c.joiner();
    EXPECT_EQ(take_seat(b, "b", 2, 5s).round, 1);
  });
  for (int i = 0; i < 5000 && !c.store.check({"ddprun/c10d/test/joining/1/1"}); ++i) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_TRUE(c.store.check({"ddprun/c10d/test/joining/1/1"})) << "b announced itself first";
  DynamicState got = join(a, "a", 2, 1, 5s);
  folder.join();
  EXPECT_TRUE(got.complete);
  EXPECT_EQ(got.round, 1);
  EXPECT_EQ(got.participants.size(), 2u);
  EXPECT_EQ(counted.state_writes, 1) << "b wrote a in; a wrote nothing more";
}

TEST(DynamicJoiner, TheNodeThatBeganTheRoundReadsItAsCompletedNotAsItBeganIt) {
  the_node_that_began_the_round_joins_it(false);
  the_node_that_began_the_round_joins_it(true);
}

// A hint behind the state (written since) costs a wait that returns at once, at most
// the read it saved: the node still gets its place.
TEST(DynamicJoiner, AHintBehindTheStateStillJoins) {
  EXPECT_LE(head_reads_of_a_told_node("1.1.1.0.0"), 2);
}

// A node that joins a forming round after the first reads the state once, when the
// round has formed: while it waits, it reads the state's head only.
TEST(DynamicJoiner, ALaterNodeReadsTheStateOnlyOnceTheRoundFormed) {
  Cluster c({2, 2, 1000});
  DynamicState first;
  std::thread a = c.first_to_join("a", first);
  CountingStore counted(*c.view);
  DynamicJoiner b = c.joiner(counted);
  DynamicState got = join(b, "b", 2, 0, 5s);
  a.join();
  EXPECT_TRUE(got.complete);
  EXPECT_EQ(got, first);
  EXPECT_EQ(counted.state_reads, 1);
}

// A node that announced itself and sees nothing written for a whole wait (the first,
// which was to write for it, is gone) writes itself in, with whoever else announced.
TEST(DynamicJoiner, AnAnnouncedNodeWhoseWriterIsGoneWritesItselfIn) {
  Cluster c({2, 2, 1000});
  c.store.add("ddprun/c10d/test/joining/0/n", 1);  // "x" came first, then left
  c.store.set("ddprun/c10d/test/joining/0/1", "3 x");
  DynamicJoiner b = c.joiner();
  DynamicState got = join(b, "b", 2, 0, 5s);
  EXPECT_TRUE(got.complete);
  EXPECT_EQ(got.participants, (std::map<std::string, int>{{"b", 2}, {"x", 3}}));
}

// A node announced behind `ahead` others, alone otherwise: how long its first wait for
// the round is, and what it is told once the run closes (which ends that wait).
struct FirstWait {
  int64_t ms = -1;
  std::string ended;
};
FirstWait first_wait_behind(int64_t ahead) {
  Cluster c({2, 2, 1000});
  c.store.add("ddprun/c10d/test/joining/0/n", ahead);
  CountingStore counted(*c.view);
  FirstWait got;
  std::thread b([&] {
    DynamicJoiner j = c.joiner(counted);
    try {
      take_seat(j, "b", 1, 60s);
    } catch (const RendezvousClosedError& e) {
      got.ended = e.what();
    }
  });
  for (int i = 0; i < 10'000 && counted.first_round_wait_ms.load() < 0; ++i) {
    std::this_thread::sleep_for(1ms);
  }
  close(c.joiner());  // wakes it: the run is over
  b.join();
  got.ms = counted.first_round_wait_ms.load();
  return got;
}

// A node announced behind many waits for its round longer before it looks at the head
// again: the store answers the nodes ahead of it meanwhile (with every node looking
// each second, most of the requests of 16,384 simulated nodes were those looks).
TEST(DynamicJoiner, ANodeBehindManyWaitsLongerBeforeItLooksAgain) {
  FirstWait far_back = first_wait_behind(2999);
  EXPECT_EQ(far_back.ms, 2999) << "a millisecond for each node ahead";
  EXPECT_NE(far_back.ended.find("the run has already finished"), std::string::npos)
      << far_back.ended;
  FirstWait second = first_wait_behind(1);  // "x" came first
  EXPECT_EQ(second.ms, 1000) << "the second of a node near the front";
  EXPECT_NE(second.ended.find("the run has already finished"), std::string::npos)
      << second.ended;
}

// Where the first to announce writes nothing for two whole waits, one of the nodes waiting
// takes its part over (and names its slot), not each: the other reads its seat only.
TEST(DynamicJoiner, OneWaitingNodeTakesOverFromAFolderThatWritesNothing) {
  Cluster c({3, 3, 1000});
  c.store.add("ddprun/c10d/test/joining/0/n", 1);  // "x" came first, then stopped
  c.store.set("ddprun/c10d/test/joining/0/1", "3 x");
  JoinedRound b, d;
  std::thread tb([&] {
    DynamicJoiner j = c.joiner();
    b = take_seat(j, "b", 2, 5s);
  });
  std::thread td([&] {
    DynamicJoiner j = c.joiner();
    d = take_seat(j, "d", 2, 5s);
  });
  tb.join();
  td.join();
  EXPECT_NE(b.state.has_value(), d.state.has_value()) << "one folds and reads the state";
  EXPECT_EQ(b.seat.world_size, 7);
  EXPECT_EQ(d.seat.group_rank, 1);
  std::string folder = c.store.get("ddprun/c10d/test/joining/0/folder", 1s);
  EXPECT_TRUE(folder == "2" || folder == "3") << folder;
}

// A folder slow to write (its requests wait behind a crowd's) is not taken over after
// one wait without a write: the node that saw one waits one more, then looks again.
TEST(DynamicJoiner, AFolderIsTakenOverOnlyAfterTwoWaitsWithoutAWrite) {
  Cluster c({2, 2, 1000});
  c.store.add("ddprun/c10d/test/joining/0/n", 1);  // "x" came first, then stopped
  c.store.set("ddprun/c10d/test/joining/0/1", "3 x");
  CountingStore counted(*c.view);
  DynamicJoiner b = c.joiner(counted);
  JoinedRound got = take_seat(b, "b", 2, 10s);
  EXPECT_EQ(got.seat.world_size, 5);
  EXPECT_EQ(counted.folder_reads, 2) << "asked who folds after each of two waits, then took over";
  EXPECT_EQ(c.store.get("ddprun/c10d/test/joining/0/folder", 1s), "2");
}

// A quarantined node announces itself; a later write handles its slot (it took in a
// node announced after it) but cannot take it in. Nothing more is written: the node
// reads the state after a whole wait with no last call running, and says why it is
// kept out, where it waited in silence on the head until its deadline.
TEST(DynamicJoiner, AHandledNodeThatWasNotTakenInSaysWhyWithinAWait) {
  Cluster c({3, 3, 1000});
  {
    DynamicJoiner judge = c.joiner();
    CancelSignal cancel;
    run_task(judge.keep_out("q", "its preflight failed", cancel));
  }
  DynamicState first;
  std::thread a = c.first_to_join("a", first);  // the folder
  testing::LogCapture log;
  std::string q_ended;
  std::thread q([&] {
    DynamicJoiner j = c.joiner();
    try {
      CancelSignal cancel;
      run_task(j.join("q", 1, 0, 60s, cancel));
    } catch (const RendezvousClosedError& e) {
      q_ended = e.what();
    }
  });
  // After q's announcement, "b"'s: the folder's write takes b in and so handles q's slot.
  for (int i = 0; i < 10'000 && !c.store.check({"ddprun/c10d/test/joining/0/2"}); ++i) {
    std::this_thread::sleep_for(1ms);
  }
  c.store.add("ddprun/c10d/test/joining/0/n", 1);
  c.store.set("ddprun/c10d/test/joining/0/3", "2 b");
  c.wait_for_participants(2);
  bool said = false;
  for (int i = 0; i < 1000 && !said; ++i) {  // at most 10 s: q's deadline is 60 s away
    said = log.text().find("this node is quarantined") != std::string::npos;
    if (!said) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(said) << log.text();
  DynamicJoiner d = c.joiner();  // the round forms with a third node
  JoinedRound got = take_seat(d, "d", 1, 5s);
  a.join();
  EXPECT_EQ(first.participants, (std::map<std::string, int>{{"a", 2}, {"b", 2}, {"d", 1}}));
  EXPECT_EQ(got.seat.group_world_size, 3);
  close(c.joiner());  // the job ends: q, still kept out, is told so
  q.join();
  EXPECT_NE(q_ended.find("quarantined"), std::string::npos) << q_ended;
}

// One node's write takes in every node that announced itself (in a numbered slot):
// here "b" announced and never writes, yet "a"'s join completes the round with it.
TEST(DynamicJoiner, AWriterAddsEveryAnnouncedNode) {
  Cluster c({2, 2, 1000});
  c.store.add("ddprun/c10d/test/joining/0/n", 1);
  c.store.set("ddprun/c10d/test/joining/0/1", "4 b");
  DynamicJoiner a = c.joiner();
  DynamicState got = join(a, "a", 2, 0, 2s);
  EXPECT_TRUE(got.complete);
  ASSERT_EQ(got.participants.size(), 2u);
  EXPECT_EQ(got.participants.at("b"), 4);
}

}  // namespace
}  // namespace ddprun::rendezvous
