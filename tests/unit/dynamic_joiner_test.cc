// The elastic rendezvous executor over MemoryStore: rounds that complete, fail, restart,
// close, and the spares that wait for them.
#include "rendezvous/join/dynamic_joiner.h"
#include "tests/fakes/forwarding_loop_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <regex>
#include <thread>

#include <boost/asio/steady_timer.hpp>

#include "rendezvous/round/round_end.h"
#include "tests/unit/joiner_cluster.h"

namespace ddprun::rendezvous {
namespace {

using namespace joiner_testing;

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
  Cluster c({2, 2, 1000});
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
  Cluster c({2, 3, 50'000});
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

// The round the state is in as a node ends the running one (its compare-and-set of
// the round's "over").
class OverRecorder : public testing::ForwardingLoopStore {
 public:
  OverRecorder(store::LoopStore& inner, store::MemoryStore& memory)
      : ForwardingLoopStore(inner), memory_(memory) {}
  Task<std::string> compare_set(std::string key, std::string expected, std::string desired,
                                CancelSignal& cancel) override {
    if (key.ends_with("/over")) {
      round_at_over = DynamicState::decode(memory_.get("ddprun/c10d/test/state", 1s)).round;
      std::lock_guard<std::mutex> lock(mu_);
      over_ = desired;
    }
    return inner().compare_set(std::move(key), std::move(expected), std::move(desired), cancel);
  }
  std::atomic<int> round_at_over{-1};
  /// The end this node wrote (its "over" value).
  RoundEnd over() const {
    std::lock_guard<std::mutex> lock(mu_);
    return RoundEnd::parse(over_);
  }

 private:
  store::MemoryStore& memory_;
  mutable std::mutex mu_;
  std::string over_;
};

// Told that their round is over, the members find the next one forming: they join it
// at once instead of waiting for it to begin.
TEST(DynamicJoiner, ALateNodeBeginsTheNextRoundBeforeItEndsTheRunningOne) {
  Cluster c({2, 3, 50'000});
  auto first = c.join_all({"a", "b"}, [&] {
    c.wait_for_participants(2);
    std::this_thread::sleep_for(20ms);
    c.now_ms = 60'000;
  });
  ASSERT_EQ(first[0].participants.size(), 2u);
  OverRecorder recorder(*c.view, c.store);
  DynamicState late;
  std::thread t([&] {
    DynamicJoiner j = c.joiner(recorder);
    late = join(j, "c", 2, 0, 10s);
  });
  auto members = c.join_all({"a", "b"}, {}, {1, 1});
  t.join();
  EXPECT_EQ(late.round, 1);
  EXPECT_EQ(ordered_members(late), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(recorder.round_at_over, 1) << "round 1 had begun when round 0 was said over";
  // The end says where round 1 is, as a member's own end would: told, they join it at once.
  RoundEnd end = recorder.over();
  EXPECT_EQ(end.kind, RoundEnd::Kind::kMembership);
  EXPECT_EQ(end.reason, "node c joins");
  EXPECT_TRUE(std::regex_match(end.next_round, std::regex(R"(1(\.\d+){4})"))) << end.encode();
}

TEST(DynamicJoiner, ComingBackFromARoundWaitsForTheNextOne) {
  Cluster c({2, 2, 1000});
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
  Cluster c({2, 2, 1000});
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
  Cluster c({1, 1, 1000});
  c.join_all({"a"});
  close(c.joiner());
  DynamicJoiner j = c.joiner();
  EXPECT_THROW(join(j, "late", 1, 0, 1s), RendezvousClosedError);
}

// A node beyond MAX waits as a spare past its join timeout while the job runs, and
// leaves with SpareNotNeeded, saying how the job ended, once the run is closed.
TEST(DynamicJoiner, ASpareWaitsAsLongAsTheJobRunsAndLeavesWhenItEnds) {
  for (bool failed : {false, true}) {
    Cluster c({1, 1, 1000});
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
  Cluster c({1, 2, 60'000});
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

// The order real clusters produce: the dead member's peers failed first (their
// collectives broke), so the survivor began the next round expecting it back, before
// its liveness expired. Its place is freed once the liveness check calls it gone, and
// the spare takes it: the round never waits for a node that cannot come back.
TEST(DynamicJoiner, ASpareTakesThePlaceOfAMemberExpectedBackOnceItIsCalledDead) {
  for (bool spare_first : {true, false}) {
    Cluster c({2, 2, 60'000});
    c.join_all({"a", "b"});
    std::atomic<bool> b_dead{false};
    std::atomic<int> asked{0};
    DynamicJoiner a = c.joiner();
    a.watch_absent(
        [&](std::vector<std::string> nodes, CancelSignal&) -> Task<std::vector<std::string>> {
          ++asked;
          EXPECT_EQ(nodes, std::vector<std::string>{"b"});
          if (!b_dead) co_return std::vector<std::string>{};
          co_return nodes;
        },
        10ms);
    DynamicState got;
    auto spare_joins = [&] {
      return std::thread([&] {
        DynamicJoiner j = c.joiner();
        got = join(j, "s", 2, 0, 10s);
      });
    };
    std::thread spare;
    if (spare_first) {
      spare = spare_joins();
      for (int i = 0; i < 10'000 && !c.names("s"); ++i) std::this_thread::sleep_for(1ms);
    }
    start_next(a, 0, true, {});  // a's workers failed: b is expected back
    std::thread dies([&] {
      // b is alive at first: its place stays kept while it is.
      for (int i = 0; i < 10'000 && asked < 2; ++i) std::this_thread::sleep_for(1ms);
      if (!spare_first) {
        spare = spare_joins();  // the spare arrives while the round forms
        for (int i = 0; i < 10'000 && !c.names("s"); ++i) std::this_thread::sleep_for(1ms);
      }
      b_dead = true;
    });
    DynamicState mine = join(a, "a", 2, 1, 10s);
    dies.join();
    spare.join();
    EXPECT_EQ(mine, got);
    EXPECT_EQ(mine.round, 1);
    EXPECT_EQ(mine.restarts, 1);
    EXPECT_EQ(ordered_members(mine), (std::vector<std::string>{"a", "s"}));
  }
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

}  // namespace
}  // namespace ddprun::rendezvous
