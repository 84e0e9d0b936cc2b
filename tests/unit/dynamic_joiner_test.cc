// The elastic rendezvous executor over MemoryStore: nodes are threads, each joining on
// a loop of its own, the wall clock is fake, every wait is bounded.
#include "rendezvous/dynamic_joiner.h"

#include <gtest/gtest.h>

#include <thread>

#include <boost/asio/steady_timer.hpp>

#include "store/memory_store.h"
#include "tests/fakes/log_capture.h"
#include "tests/helpers/run_task.h"

namespace ddprun::rendezvous {
namespace {

using namespace std::chrono_literals;
using testing::run_task;

// Joins on a loop of its own, as an agent does on its loop, and returns the whole
// state of the round it joined (asked for: most nodes read their seat only).
DynamicState join(DynamicJoiner& j, const std::string& node, int workers, int min_round,
                  std::chrono::milliseconds timeout) {
  CancelSignal cancel;
  JoinedRound joined = run_task(j.join(node, workers, min_round, timeout, cancel, true));
  if (!joined.state) throw std::logic_error("the whole state was asked for, not read");
  return std::move(*joined.state);
}

// Joins as most nodes do: their seat, the whole state only where it was read anyway.
JoinedRound take_seat(DynamicJoiner& j, const std::string& node, int workers,
                      std::chrono::milliseconds timeout) {
  CancelSignal cancel;
  return run_task(j.join(node, workers, 0, timeout, cancel));
}

// A quick step of the joiner, on a loop of its own.
void start_next(DynamicJoiner& j, int round, bool failure, std::set<std::string> lost) {
  CancelSignal cancel;
  run_task(j.start_next_round(round, failure, std::move(lost), cancel));
}
void close(DynamicJoiner&& j, bool failed = false) {
  CancelSignal cancel;
  run_task(j.close(failed, cancel));
}

struct Cluster {
  store::MemoryStore store;
  // The nodes' view of it: waits on their loops (the store's own wait list; the
  // memory view holds nothing of a wait, so the nodes' threads share it).
  std::unique_ptr<store::LoopStore> view = on_loop(store);
  std::atomic<int64_t> now_ms{0};
  DynamicConfig config{2, 3, 1000};

  DynamicJoiner joiner() { return joiner(*view); }
  // A node whose requests go through `over` (a store that counts or drops some).
  DynamicJoiner joiner(store::LoopStore& over) {
    return DynamicJoiner(over, "ddprun/c10d/test/", config, [this] { return now_ms.load(); });
  }

  // Until the shared state lists `n` participants (both joined, last call armed).
  void wait_for_participants(size_t n) {
    for (int i = 0; i < 10'000; ++i) {
      if (store.check({"ddprun/c10d/test/state"}) &&
          DynamicState::decode(store.get("ddprun/c10d/test/state", 1s)).participants.size() >=
              n) {
        return;
      }
      std::this_thread::sleep_for(1ms);
    }
    ADD_FAILURE() << "participants never reached " << n;
  }

  // Whether the shared state names `node` anywhere (in, waiting or a spare).
  bool names(const std::string& node) {
    DynamicState s = DynamicState::decode(store.get("ddprun/c10d/test/state", 1s));
    return s.participants.count(node) || s.waiting.count(node) || s.spares.count(node);
  }

  // `node` joins on a thread of its own, putting what it got in `got`.
  std::thread join_on_thread(const std::string& node, DynamicState& got) {
    return std::thread([this, node, &got] {
      DynamicJoiner j = joiner();
      got = join(j, node, 2, 0, 5s);
    });
  }

  // Each node joins on a thread of its own; returns the states they got.
  // `min_round` per node: a node coming back from round r joins r+1 or later; a new
  // node joins whatever round there is (0).
  std::vector<DynamicState> join_all(const std::vector<std::string>& nodes,
                                     std::function<void()> meanwhile = {},
                                     std::vector<int> min_round = {}) {
    min_round.resize(nodes.size(), min_round.empty() ? 0 : min_round.back());
    std::vector<DynamicState> got(nodes.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < nodes.size(); ++i) {
      threads.emplace_back([&, i] {
        DynamicJoiner j = joiner();
        try {
          got[i] = join(j, nodes[i], 2, min_round[i], 10s);
        } catch (const std::exception& e) {
          ADD_FAILURE() << nodes[i] << ": " << e.what();
        }
      });
    }
    if (meanwhile) meanwhile();
    for (auto& t : threads) t.join();
    return got;
  }
};

TEST(DynamicJoiner, MaxNodesCompleteTogether) {
  Cluster c;
  auto got = c.join_all({"n/3", "n/1", "n/2"});
  for (const auto& s : got) {
    EXPECT_TRUE(s.complete);
    EXPECT_EQ(ordered_members(s), (std::vector<std::string>{"n/1", "n/2", "n/3"}));
    EXPECT_EQ(s.round, 0);
  }
}

TEST(DynamicJoiner, LastCallCompletesWithMinWhenTheClockPassesIt) {
  Cluster c;
  auto got = c.join_all({"a", "b"}, [&] {
    // Both are in and waiting for the last call; then time passes.
    c.wait_for_participants(2);
    std::this_thread::sleep_for(20ms);
    c.now_ms = 5000;
  });
  EXPECT_EQ(got[0].participants.size(), 2u);
  EXPECT_EQ(got[0], got[1]);
}

TEST(DynamicJoiner, TimeoutSaysWhatIsMissing) {
  Cluster c;
  DynamicJoiner j = c.joiner();
  try {
    join(j, "alone", 1, 0, 100ms);
    FAIL();
  } catch (const TimeoutError& e) {
    EXPECT_STREQ(e.what(), "1 node(s) joined, at least 2 needed");
  }
}

TEST(DynamicJoiner, NextRoundAfterAFailureIsStartedOnceAndCounted) {
  Cluster c;
  c.config = {2, 2, 1000};
  auto first = c.join_all({"a", "b"});
  // Both nodes see the failure and both try to start the next round.
  DynamicJoiner ja = c.joiner();
  DynamicJoiner jb = c.joiner();
  start_next(ja, 0, true, {});
  start_next(jb, 0, true, {});
  auto second = c.join_all({"a", "b"}, {}, {1, 1});
  EXPECT_EQ(second[0].round, 1);
  EXPECT_EQ(second[0].restarts, 1) << "one restart, not two";
}

TEST(DynamicJoiner, LateNodeEndsTheRunningRoundAndJoinsTheNext) {
  Cluster c;
  c.config = {2, 3, 50'000};
  c.now_ms = 0;
  auto first = c.join_all({"a", "b"}, [&] {
    c.wait_for_participants(2);
    std::this_thread::sleep_for(20ms);
    c.now_ms = 60'000;
  });
  ASSERT_EQ(first[0].participants.size(), 2u);
  // "c" arrives while round 0 runs; a and b see round 0 over and rejoin.
  auto second = c.join_all({"c", "a", "b"}, {}, {0, 1, 1});
  EXPECT_EQ(second[0].round, 1);
  EXPECT_EQ(second[0].restarts, 0);
  EXPECT_EQ(ordered_members(second[0]), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(c.store.check({"ddprun/c10d/test/round/0/over"}));
}

TEST(DynamicJoiner, ComingBackFromARoundWaitsForTheNextOne) {
  Cluster c;
  c.config = {2, 2, 1000};
  c.join_all({"a", "b"});
  // a comes back first; round 0 is still the state until b starts round 1.
  std::thread b([&] {
    std::this_thread::sleep_for(30ms);
    DynamicJoiner jb = c.joiner();
    start_next(jb, 0, false, {});
    join(jb, "b", 2, 1, 10s);
  });
  DynamicJoiner ja = c.joiner();
  DynamicState s = join(ja, "a", 2, 1, 10s);
  b.join();
  EXPECT_EQ(s.round, 1);
}

// A cancel on the join's loop ends its wait at once: an error, not the join's
// timeout, with nothing interrupted from another thread.
TEST(DynamicJoiner, CancelStopsAWaitingJoin) {
  Cluster c;
  boost::asio::io_context io;
  CancelSignal cancel("rendezvous cancelled");
  boost::asio::steady_timer later(io, 50ms);
  later.async_wait([&](const boost::system::error_code&) { cancel.cancel(); });
  DynamicJoiner j = c.joiner();
  try {
    run_task(io, j.join("a", 1, 0, 30s, cancel));
    FAIL() << "the join ended without its peers";
  } catch (const TimeoutError&) {
    FAIL() << "timed out instead of cancelled";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "rendezvous cancelled");
  }
}

// A member that reads the state of its round only after the run closed (another
// member's workers failed for the last time, and it closed the run) still gets its
// place: the agent learns how the round ended from the round. A node coming back from
// that round is refused.
TEST(DynamicJoiner, AMemberOfTheLastRoundGetsItsPlaceAfterTheRunClosed) {
  Cluster c;
  c.config = {2, 2, 1000};
  auto got = c.join_all({"a", "b"});
  ASSERT_TRUE(got[0].complete);
  close(c.joiner(), true);
  DynamicJoiner a = c.joiner();
  DynamicState again = join(a, "a", 2, 0, 5s);
  EXPECT_TRUE(again.closed);
  EXPECT_EQ(again.participants, got[0].participants);
  DynamicJoiner back = c.joiner();
  EXPECT_THROW(join(back, "a", 2, 1, 5s), RendezvousClosedError) << "round 0 is behind it";
}

TEST(DynamicJoiner, ClosedRunIsRefused) {
  Cluster c;
  c.config = {1, 1, 1000};
  c.join_all({"a"});
  close(c.joiner());
  DynamicJoiner j = c.joiner();
  EXPECT_THROW(join(j, "late", 1, 0, 1s), RendezvousClosedError);
}

// A node beyond MAX waits as a spare past its join timeout while the job runs, and
// leaves with SpareNotNeeded, saying how the job ended, once the run is closed.
TEST(DynamicJoiner, ASpareWaitsAsLongAsTheJobRunsAndLeavesWhenItEnds) {
  for (bool failed : {false, true}) {
    Cluster c;
    c.config = {1, 1, 1000};
    c.join_all({"a"});
    std::atomic<bool> ended{false};
    std::thread spare([&] {
      DynamicJoiner j = c.joiner();
      try {
        join(j, "b", 1, 0, 100ms);
        ADD_FAILURE() << "the spare joined a full round";
      } catch (const SpareNotNeeded& e) {
        EXPECT_EQ(e.job_failed(), failed);
        EXPECT_TRUE(ended.load()) << "left before the job ended: " << e.what();
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
      }
    });
    for (int i = 0; i < 10'000 && !c.names("b"); ++i) {
      std::this_thread::sleep_for(1ms);
    }
    std::this_thread::sleep_for(300ms);  // three join timeouts
    ended = true;
    close(c.joiner(), failed);
    spare.join();
  }
}

// A spare takes the place of a member that died: the next round completes with it at
// once, and the restart is counted once.
TEST(DynamicJoiner, ASpareTakesTheDeadMembersPlaceInTheNextRound) {
  Cluster c;
  c.config = {1, 2, 60'000};
  c.join_all({"a", "b"});
  DynamicState got;
  std::thread spare([&] {
    DynamicJoiner j = c.joiner();
    got = join(j, "s", 2, 0, 10s);
  });
  for (int i = 0; i < 10'000 && !c.names("s"); ++i) {
    std::this_thread::sleep_for(1ms);
  }
  DynamicJoiner a = c.joiner();
  start_next(a, 0, true, {"b"});
  DynamicState mine = join(a, "a", 2, 1, 10s);
  spare.join();
  EXPECT_EQ(mine, got);
  EXPECT_EQ(mine.round, 1);
  EXPECT_EQ(mine.restarts, 1);
  EXPECT_EQ(ordered_members(mine), (std::vector<std::string>{"a", "s"}));
}

// A node's view of the store that counts its reads of the state (the whole state,
// which names every node).
class CountingStore : public store::LoopStore {
 public:
  explicit CountingStore(store::LoopStore& inner) : inner_(inner) {}
  store::Store& store() override { return inner_.store(); }
  Task<std::optional<std::vector<std::string>>> wait_for(std::vector<std::string> keys,
                                                         std::chrono::milliseconds timeout,
                                                         CancelSignal& cancel) override {
    return inner_.wait_for(std::move(keys), timeout, cancel);
  }
  Task<std::vector<std::optional<std::string>>> get_now(std::vector<std::string> keys,
                                                        CancelSignal& cancel) override {
    for (const auto& k : keys) state_reads += k == "ddprun/c10d/test/state" ? 1 : 0;
    return inner_.get_now(std::move(keys), cancel);
  }
  Task<void> set(std::string key, std::string value, CancelSignal& cancel) override {
    return inner_.set(std::move(key), std::move(value), cancel);
  }
  Task<int64_t> add(std::string key, int64_t delta, CancelSignal& cancel) override {
    return inner_.add(std::move(key), delta, cancel);
  }
  Task<std::string> compare_set(std::string key, std::string expected, std::string desired,
                                CancelSignal& cancel) override {
    return inner_.compare_set(std::move(key), std::move(expected), std::move(desired), cancel);
  }
  Task<void> multi_set(std::vector<std::string> keys, std::vector<std::string> values,
                       CancelSignal& cancel) override {
    if (drop_multi_set) co_return;  // as if the writer died right after its write
    co_await inner_.multi_set(std::move(keys), std::move(values), cancel);
  }
  int state_reads = 0;
  bool drop_multi_set = false;

 private:
  store::LoopStore& inner_;
};

// The first node to announce itself for a forming round writes in the nodes that
// announce themselves after it: here "b" and "c" only announce (and never write), and
// "a" completes the round with them.
TEST(DynamicJoiner, TheFirstToAnnounceWritesInThoseAnnouncedAfterIt) {
  Cluster c;
  c.config = {3, 3, 1000};
  DynamicState got;
  std::thread a = c.join_on_thread("a", got);
  c.wait_for_participants(1);
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
// that names every node.
TEST(DynamicJoiner, ALaterNodeReadsItsSeatNotTheState) {
  Cluster c;
  c.config = {2, 2, 1000};
  DynamicState first;
  std::thread a = c.join_on_thread("a", first);
  c.wait_for_participants(1);
  CountingStore counted(*c.view);
  DynamicJoiner b = c.joiner(counted);
  JoinedRound got = take_seat(b, "b", 3, 5s);
  a.join();
  EXPECT_EQ(counted.state_reads, 0);
  EXPECT_FALSE(got.state);
  EXPECT_EQ(got.round, 0);
  EXPECT_EQ(got.seat, seat_in(first, {"a", "b"}, 1));
  EXPECT_EQ(got.seat.first_rank, 2);
  EXPECT_EQ(got.seat.world_size, 5);
}

// Where no seat comes (the node that completed the round died before it wrote them),
// a node reads the state after a wait, and joins all the same.
TEST(DynamicJoiner, ANodeWhoseSeatNeverCameReadsTheState) {
  Cluster c;
  c.config = {2, 2, 1000};
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

// A node that joins a forming round after the first reads the state once, when the
// round has formed: while it waits, it reads the state's head only.
TEST(DynamicJoiner, ALaterNodeReadsTheStateOnlyOnceTheRoundFormed) {
  Cluster c;
  c.config = {2, 2, 1000};
  DynamicState first;
  std::thread a = c.join_on_thread("a", first);
  c.wait_for_participants(1);
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
  Cluster c;
  c.config = {2, 2, 1000};
  c.store.add("ddprun/c10d/test/joining/0/n", 1);  // "x" came first, then left
  c.store.set("ddprun/c10d/test/joining/0/1", "3 x");
  DynamicJoiner b = c.joiner();
  DynamicState got = join(b, "b", 2, 0, 5s);
  EXPECT_TRUE(got.complete);
  EXPECT_EQ(got.participants, (std::map<std::string, int>{{"b", 2}, {"x", 3}}));
}

// Where the first to announce writes nothing for a whole wait, one of the nodes waiting
// takes its part over (and names its slot), not each: the other reads its seat only.
TEST(DynamicJoiner, OneWaitingNodeTakesOverFromAFolderThatWritesNothing) {
  Cluster c;
  c.config = {3, 3, 1000};
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

// A quarantined node announces itself; a later write handles its slot (it took in a
// node announced after it) but cannot take it in. Nothing more is written: the node
// reads the state after a whole wait with no last call running, and says why it is
// kept out, where it waited in silence on the head until its deadline.
TEST(DynamicJoiner, AHandledNodeThatWasNotTakenInSaysWhyWithinAWait) {
  Cluster c;
  c.config = {3, 3, 1000};
  {
    DynamicJoiner judge = c.joiner();
    CancelSignal cancel;
    run_task(judge.keep_out("q", "its preflight failed", cancel));
  }
  DynamicState first;
  std::thread a = c.join_on_thread("a", first);  // the folder
  c.wait_for_participants(1);
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

// A counter of the state that holds something else is an error naming it, not a
// crash or a wait.
TEST(DynamicJoiner, ACounterThatHoldsNoNumberIsAnErrorNamingIt) {
  Cluster c;
  c.store.set("ddprun/c10d/test/version", "7 or so");
  DynamicJoiner j = c.joiner();
  try {
    join(j, "a", 2, 0, 2s);
    FAIL() << "joined";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("ddprun/c10d/test/version does not hold a number"),
              std::string::npos)
        << e.what();
  }
}

// One node's write takes in every node that announced itself (in a numbered slot):
// here "b" announced and never writes, yet "a"'s join completes the round with it.
TEST(DynamicJoiner, AWriterAddsEveryAnnouncedNode) {
  Cluster c;
  c.config = {2, 2, 1000};
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
