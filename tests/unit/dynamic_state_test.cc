// The elastic rendezvous algorithm as a pure function: every decision checked with
// hand-made states and a fake clock (milliseconds passed in).
#include "rendezvous/join/dynamic_state.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace ddprun::rendezvous {
namespace {

using Kind = Action::Kind;

DynamicConfig config(int lo, int hi, int64_t last_call = 1000) { return {lo, hi, last_call}; }

// Applies `node`'s writes until it waits or is done, as an executor would.
Action step(DynamicState& s, const std::string& node, int64_t now, const DynamicConfig& c) {
  for (int i = 0; i < 10; ++i) {
    Action a = decide_join(s, node, 2, now, c);
    if (a.kind != Kind::kWrite) return a;
    s = a.next;
  }
  ADD_FAILURE() << "no progress";
  return {};
}

TEST(DynamicState, JsonRoundTrip) {
  DynamicState s;
  s.round = 3;
  s.restarts = 1;
  s.participants = {{"a/1", 2}, {"b/2", 4}};
  s.expected = {"a/1"};
  s.waiting = {{"c/3", 1}};
  s.spares = {{"d/4", 2}};
  s.failed = true;
  s.failures = {{"10.0.0.2", 1}};
  s.quarantined = {{"10.0.0.3", {5000, 2, "2 failure(s)"}}};
  s.last_call_deadline_ms = 1234;
  EXPECT_EQ(DynamicState::decode(s.encode()), s);
  EXPECT_THROW(DynamicState::decode("{\"round\": 1}"), Error);
  EXPECT_THROW(DynamicState::decode("not json"), Error);
  std::string text = s.encode();
  EXPECT_EQ(text.find('\n'), text.find("\np 2 a/1")) << "a line per node, after the header";
  // Every way the text can be wrong is an error naming the line, never a crash.
  for (const std::string bad :
       {"", "ddprun-rdzv 2 round 0 restarts 0 complete 0 closed 0 failed 0 deadline 0",
        "ddprun-rdzv 1 round x restarts 0 complete 0 closed 0 failed 0 deadline 0",
        "ddprun-rdzv 1 round 0 restarts 0 complete 2 closed 0 failed 0 deadline 0",
        "ddprun-rdzv 1 round 0 restarts 0 complete 0 closed 0 failed 0",
        "ddprun-rdzv 1 round 0 restarts 0 complete 0 closed 0 failed 0 deadline 0\np 1",
        "ddprun-rdzv 1 round 0 restarts 0 complete 0 closed 0 failed 0 deadline 0\np 1 a b",
        "ddprun-rdzv 1 round 0 restarts 0 complete 0 closed 0 failed 0 deadline 0\nz 1 a",
        "ddprun-rdzv 1 round 0 restarts 0 complete 0 closed 0 failed 0 deadline 0\n\np 1 a",
        "ddprun-rdzv 1 round 0 restarts 0 complete 0 closed 0 failed 0 deadline 0\nq 5 1"}) {
    EXPECT_THROW(DynamicState::decode(bad), StoreError) << bad;
  }
  // A reason with a line break stays one entry.
  s.quarantined["10.0.0.3"].reason = "two\nlines";
  EXPECT_EQ(DynamicState::decode(s.encode()).quarantined.at("10.0.0.3").reason, "two lines");
}

TEST(DynamicState, CompletesAtOnceAtMax) {
  DynamicState s;
  auto c = config(2, 2);
  EXPECT_EQ(step(s, "a", 0, c).kind, Kind::kWait);
  EXPECT_FALSE(s.complete);
  EXPECT_EQ(step(s, "b", 0, c).kind, Kind::kDone);
  EXPECT_TRUE(s.complete);
  EXPECT_EQ(step(s, "a", 0, c).kind, Kind::kDone);
  EXPECT_EQ(ordered_members(s), (std::vector<std::string>{"a", "b"}));
}

TEST(DynamicState, LastCallStartsAtMinAndEndsTheRound) {
  DynamicState s;
  auto c = config(2, 4, 1000);
  step(s, "a", 0, c);
  Action b = step(s, "b", 100, c);
  EXPECT_EQ(b.kind, Kind::kWait);
  EXPECT_EQ(s.last_call_deadline_ms, 1100);
  EXPECT_EQ(b.wake_at_ms, 1100);
  EXPECT_EQ(step(s, "a", 1099, c).kind, Kind::kWait);
  EXPECT_EQ(step(s, "a", 1100, c).kind, Kind::kDone);
  EXPECT_EQ(s.participants.size(), 2u);
}

// A node that failed its preflight before its first round is kept out by its address:
// the others, at MAX with it, complete without waiting the last call for it.
TEST(DynamicState, ANodeKeptOutHoldsNoLastCallOpen) {
  auto c = config(2, 3, 1000);
  DynamicState s;
  s.quarantined = {{"10.0.0.3", {5000, 1, "preflight failed on gpu03"}}};
  step(s, "a", 0, c);
  EXPECT_EQ(step(s, "b", 100, c).kind, Kind::kDone);
  EXPECT_EQ(s.participants.size(), 2u);
  // Once its cooldown is over it may come again: the last call waits for it as for anyone.
  DynamicState later;
  later.quarantined = s.quarantined;
  step(later, "a", 6000, c);
  EXPECT_EQ(step(later, "b", 6000, c).kind, Kind::kWait);
  EXPECT_EQ(later.last_call_deadline_ms, 7000);
}

TEST(DynamicState, AWallClockJumpBackNeverHoldsTheLastCallOpen) {
  DynamicState s;
  auto c = config(2, 4, 1000);
  step(s, "a", 10'000'000, c);
  EXPECT_EQ(step(s, "b", 10'000'000, c).kind, Kind::kWait);
  EXPECT_EQ(s.last_call_deadline_ms, 10'001'000);
  // The wall clock jumps an hour back: the deadline is an hour away for this node.
  EXPECT_EQ(step(s, "a", 10'000'000 - 3'600'000, c).kind, Kind::kDone)
      << "a deadline further than one last call away counts as passed";
}

TEST(DynamicState, ArrivalDuringLastCallIsIncluded) {
  DynamicState s;
  auto c = config(1, 3, 1000);
  step(s, "a", 0, c);
  step(s, "c", 500, c);
  EXPECT_EQ(s.last_call_deadline_ms, 1000) << "the deadline is not pushed back";
  EXPECT_EQ(step(s, "b", 600, c).kind, Kind::kDone) << "max reached";
  EXPECT_EQ(ordered_members(s), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(DynamicState, BelowMinNeverCompletes) {
  DynamicState s;
  auto c = config(3, 4, 10);
  step(s, "a", 0, c);
  step(s, "b", 0, c);
  EXPECT_EQ(step(s, "a", 1'000'000, c).kind, Kind::kWait);
  EXPECT_EQ(s.last_call_deadline_ms, 0);
}

TEST(DynamicState, LateNodeWaitsAndIsExpectedNextRound) {
  DynamicState s;
  auto c = config(2, 3);
  step(s, "a", 0, c);
  step(s, "b", 0, c);
  step(s, "a", 5000, c);
  ASSERT_TRUE(s.complete);
  EXPECT_EQ(step(s, "c", 5000, c).kind, Kind::kWait);
  EXPECT_EQ(s.waiting.count("c"), 1u);
  EXPECT_EQ(step(s, "c", 5000, c).kind, Kind::kWait) << "asks once";
  DynamicState next = next_round(s, false, {});
  EXPECT_EQ(next.round, 1);
  EXPECT_EQ(next.restarts, 0) << "membership changes are free";
  EXPECT_EQ(next.expected, (std::set<std::string>{"a", "b", "c"}));
  step(next, "c", 5001, c);
  step(next, "a", 5001, c);
  EXPECT_EQ(step(next, "b", 5001, c).kind, Kind::kDone) << "max reached";
}

TEST(DynamicState, AStateWithoutSparesStillReads) {
  DynamicState s = DynamicState::decode(
      R"({"round":2,"restarts":0,"complete":true,"closed":false,"participants":{"a":1},)"
      R"("expected":[],"waiting":{},"deadline":0})");
  EXPECT_EQ(s.round, 2);
  EXPECT_TRUE(s.spares.empty());
  EXPECT_FALSE(s.failed);
}

TEST(DynamicState, AFullRoundKeepsLateNodesAsSparesAndRunsOn) {
  DynamicState s;
  auto c = config(1, 2);
  step(s, "a", 0, c);
  step(s, "b", 0, c);
  ASSERT_TRUE(s.complete);
  DynamicState running = s;
  EXPECT_EQ(step(s, "c", 0, c).kind, Kind::kWait);
  EXPECT_TRUE(s.waiting.empty()) << "no room: do not disturb the running round";
  EXPECT_EQ(s.spares, (std::map<std::string, int>{{"c", 2}}));
  EXPECT_EQ(s.round, running.round);
  EXPECT_EQ(s.participants, running.participants);
  EXPECT_TRUE(s.complete);
  EXPECT_EQ(decide_join(s, "c", 2, 0, c).kind, Kind::kWait) << "registers once";
}

TEST(DynamicState, TheNextRoundTakesASpareAtOnce) {
  DynamicState s;
  auto c = config(1, 2, 60'000);
  step(s, "a", 0, c);
  step(s, "b", 0, c);
  step(s, "c", 0, c);  // a spare
  // b dies: a starts the next round, which expects a and the spare.
  DynamicState next = next_round(s, true, {"b"});
  EXPECT_EQ(next.expected, (std::set<std::string>{"a"}));
  EXPECT_EQ(next.spares, (std::map<std::string, int>{{"c", 2}}));
  EXPECT_EQ(step(next, "a", 1, c).kind, Kind::kWait) << "a spare fits: it is waited for";
  EXPECT_EQ(step(next, "c", 1, c).kind, Kind::kDone) << "full size, no last call";
  EXPECT_EQ(ordered_members(next), (std::vector<std::string>{"a", "c"}));
  EXPECT_TRUE(next.spares.empty());
}

TEST(DynamicState, MoreSparesThanPlacesFillTheRoundAndTheRestWaitAgain) {
  DynamicState s;
  auto c = config(2, 3, 60'000);
  for (const char* n : {"a", "b", "c", "d", "e"}) step(s, n, 0, c);
  ASSERT_EQ(s.participants.size(), 3u);
  ASSERT_EQ(s.spares.size(), 2u);
  DynamicState next = next_round(s, true, {"c"});
  step(next, "e", 1, c);
  step(next, "a", 1, c);
  EXPECT_EQ(step(next, "b", 1, c).kind, Kind::kDone) << "max reached, d not awaited";
  EXPECT_EQ(step(next, "d", 1, c).kind, Kind::kWait);
  EXPECT_EQ(next.spares, (std::map<std::string, int>{{"d", 2}})) << "a spare again";
}

TEST(DynamicState, ASpareThatDiedHoldsTheRoundNoLongerThanTheLastCall) {
  DynamicState s;
  auto c = config(1, 2, 1000);
  step(s, "a", 0, c);
  step(s, "b", 0, c);
  step(s, "c", 0, c);  // a spare, which dies unseen
  DynamicState next = next_round(s, true, {"b"});
  EXPECT_EQ(step(next, "a", 10, c).kind, Kind::kWait);
  EXPECT_EQ(next.last_call_deadline_ms, 1010);
  EXPECT_EQ(step(next, "a", 1010, c).kind, Kind::kDone);
  EXPECT_EQ(ordered_members(next), (std::vector<std::string>{"a"}));
  EXPECT_TRUE(next.spares.empty()) << "forgotten: it did not come while there was room";
}

TEST(DynamicState, SparesNeverTakeThePlacesOfTheNodesExpectedBack) {
  DynamicState s;
  auto c = config(1, 2, 60'000);
  for (const char* n : {"a", "b", "s1", "s2"}) step(s, n, 0, c);
  DynamicState next = next_round(s, false, {"b"});
  EXPECT_EQ(step(next, "s1", 1, c).kind, Kind::kWait) << "one place is free";
  EXPECT_EQ(next.participants.count("s1"), 1u);
  EXPECT_EQ(step(next, "s2", 1, c).kind, Kind::kWait) << "the other is a's";
  EXPECT_EQ(next.participants.count("s2"), 0u);
  EXPECT_EQ(step(next, "a", 1, c).kind, Kind::kDone);
  EXPECT_EQ(ordered_members(next), (std::vector<std::string>{"a", "s1"}));
  EXPECT_EQ(next.spares, (std::map<std::string, int>{{"s2", 2}}));
}

TEST(DynamicState, ANewNodeArrivingAsTheSurvivorsRejoinWaitsAsASpare) {
  DynamicState s;
  auto c = config(1, 2, 60'000);
  step(s, "a", 0, c);
  step(s, "b", 0, c);
  DynamicState next = next_round(s, true, {});
  EXPECT_EQ(step(next, "n", 1, c).kind, Kind::kWait);
  EXPECT_EQ(next.spares.count("n"), 1u);
  step(next, "a", 1, c);
  EXPECT_EQ(step(next, "b", 1, c).kind, Kind::kDone);
  EXPECT_EQ(ordered_members(next), (std::vector<std::string>{"a", "b"}));
}

TEST(DynamicState, RestartRoundCompletesAsSoonAsTheSurvivorsAreBack) {
  DynamicState s;
  auto c = config(2, 4, 60'000);
  step(s, "a", 0, c);
  step(s, "b", 0, c);
  step(s, "c", 0, c);
  step(s, "a", 60'000, c);
  ASSERT_TRUE(s.complete);
  // c died: the next round expects a and b only, and needs no last call.
  DynamicState next = next_round(s, true, {"c"});
  EXPECT_EQ(next.restarts, 1);
  step(next, "b", 60'001, c);
  EXPECT_EQ(step(next, "a", 60'001, c).kind, Kind::kDone);
  EXPECT_EQ(ordered_members(next), (std::vector<std::string>{"a", "b"}));
}

TEST(DynamicState, NodeAddressIsTheIdWithoutPidAndPort) {
  EXPECT_EQ(node_address("10.0.0.1/0000000042/29500"), "10.0.0.1");
  EXPECT_EQ(node_address("a"), "a");
}

TEST(DynamicState, ANodeIsQuarantinedAtTheFailureLimitForACooldownThatDoubles) {
  DynamicConfig c = config(1, 2);
  c.node_failure_limit = 2;
  c.quarantine_ms = 1000;
  DynamicState s = note_failure({}, "h/1/1", "rank 0 exited with 1", 0, c);
  EXPECT_EQ(s.failures.at("h/1/1"), 1);
  EXPECT_EQ(quarantine_of(s, "h/1/1", 0), nullptr) << "below the limit";
  s = note_failure(s, "h/1/1", "rank 1 exited with 1", 10, c);
  ASSERT_NE(quarantine_of(s, "h/1/1", 10), nullptr);
  EXPECT_EQ(quarantine_of(s, "h/2/2", 10), nullptr) << "another agent at its address is not out";
  EXPECT_EQ(s.quarantined.at("h/1/1").until_ms, 1010);
  EXPECT_EQ(s.quarantined.at("h/1/1").reason,
            "2 failure(s) of its workers; last: rank 1 exited with 1");
  EXPECT_EQ(quarantine_of(s, "h/1/1", 1010), nullptr) << "over at its end";
  s = note_failure(s, "h/1/1", "x", 2000, c);
  EXPECT_EQ(quarantine_of(s, "h/1/1", 2000), nullptr) << "the next limit's worth: one more";
  s = note_failure(s, "h/1/1", "x", 2000, c);
  EXPECT_EQ(s.quarantined.at("h/1/1").until_ms, 4000) << "the second cooldown doubles";
  EXPECT_EQ(s.quarantined.at("h/1/1").times, 2);
  EXPECT_EQ(s.quarantined.at("h/1/1").reason,
            "4 failure(s) of its workers, quarantined 2 times; last: x")
      << "the real count, not the limit";
  c.node_failure_limit = 0;
  EXPECT_TRUE(note_failure({}, "h/1/1", "x", 0, c).failures.empty()) << "0: never";
}

// A node back from quarantine does not force a running round to start over (each time
// it came back and failed again, every healthy node restarted and the budget went): it
// waits as a spare and takes a place in the next round that forms for another reason.
// A node new to the job still makes a round with room start over for it.
TEST(DynamicState, ANodeBackFromQuarantineWaitsAsASpareForTheNextRound) {
  DynamicState s;
  auto c = config(2, 3, 60'000);
  step(s, "a/1/1", 0, c);
  step(s, "b/2/2", 0, c);
  s.complete = true;
  s.quarantined["q/3/3"] = {5000, 1, "1 failure(s) of its workers"};
  EXPECT_TRUE(back_from_quarantine(s, "q/3/3", 5000));
  EXPECT_FALSE(back_from_quarantine(s, "q/3/3", 4999)) << "still in it";
  EXPECT_FALSE(back_from_quarantine(s, "n/4/4", 5000));
  step(s, "q/3/3", 5000, c);
  EXPECT_EQ(s.spares.count("q/3/3"), 1u);
  EXPECT_TRUE(s.waiting.empty()) << "the running round goes on";
  DynamicState other = s;
  step(other, "n/4/4", 5000, c);
  EXPECT_EQ(other.waiting.count("n/4/4"), 1u) << "a new node still grows the job";
  DynamicState next = next_round(s, false, {}, 5000);
  step(next, "q/3/3", 5000, c);
  EXPECT_EQ(next.participants.count("q/3/3"), 1u) << "a place in the next round";
}

TEST(DynamicState, AQuarantinedNodeIsExpectedNowhereAndWaitsOutItsCooldownWhateverItsAgent) {
  DynamicState s;
  auto c = config(1, 2, 60'000);
  step(s, "a/1/1", 0, c);
  step(s, "b/2/2", 0, c);
  s.quarantined["b"] = {5000, 1, "1 failure(s) of its workers"};
  DynamicState next = next_round(s, true, {}, 100);
  EXPECT_EQ(next.expected, (std::set<std::string>{"a/1/1"}));
  Action b = decide_join(next, "b/2/2", 2, 100, c);
  EXPECT_EQ(b.kind, Kind::kWait);
  EXPECT_EQ(b.wake_at_ms, 5000);
  EXPECT_EQ(decide_join(next, "b/9/9", 2, 100, c).kind, Kind::kWait) << "its agent restarted";
  EXPECT_EQ(step(next, "a/1/1", 100, c).kind, Kind::kDone) << "not waited for";
  EXPECT_EQ(decide_join(next, "b/2/2", 2, 4999, c).kind, Kind::kWait) << "no spare, no waiting";
  EXPECT_TRUE(next.waiting.empty() && next.spares.empty());
  step(next, "b/2/2", 5000, c);
  EXPECT_EQ(next.spares.count("b/2/2"), 1u) << "back after its cooldown, as a spare";
}

TEST(DynamicState, ANodeKeptOutBetweenRoundsIsNotWaitedFor) {
  DynamicState s;
  auto c = config(1, 3, 60'000);
  c.quarantine_ms = 1000;
  for (const char* n : {"a/1/1", "b/2/2", "c/3/3"}) step(s, n, 0, c);
  s = next_round(s, true, {}, 10);
  s = quarantine(s, "c", "preflight failed on c; disk: /ckpt", 20, c);  // c leaves
  EXPECT_EQ(s.quarantined.at("c").until_ms, 1020);
  step(s, "a/1/1", 30, c);
  EXPECT_EQ(step(s, "b/2/2", 30, c).kind, Kind::kDone) << "no last call for c";
  EXPECT_EQ(ordered_members(s), (std::vector<std::string>{"a/1/1", "b/2/2"}));
}

TEST(DynamicState, ClosedRunRefusesEveryone) {
  DynamicState s;
  s.closed = true;
  EXPECT_EQ(decide_join(s, "a", 1, 0, config(1, 1)).kind, Kind::kClosed);
}

TEST(DynamicState, RanksAreDeterministicForAMembership) {
  DynamicState x;
  DynamicState y;
  auto c = config(3, 3);
  for (const char* n : {"10.0.0.2/1", "10.0.0.1/9", "10.0.0.1/3"}) step(x, n, 0, c);
  for (const char* n : {"10.0.0.1/3", "10.0.0.2/1", "10.0.0.1/9"}) step(y, n, 0, c);
  EXPECT_EQ(ordered_members(x), ordered_members(y));
  EXPECT_EQ(ordered_members(x).front(), "10.0.0.1/3");
}

}  // namespace
}  // namespace ddprun::rendezvous
