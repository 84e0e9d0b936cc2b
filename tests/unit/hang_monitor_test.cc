#include "agent/hang/hang_monitor.h"

#include <gtest/gtest.h>

namespace ddprun::agent {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

HangOptions fixed(milliseconds timeout) {
  HangOptions o;
  o.mode = HangOptions::Mode::kFixed;
  o.timeout = timeout;
  o.initial_timeout = seconds(100);
  return o;
}

/// Auto mode, 5 x the longest interval, at least `floor`; warm-up 100 s.
HangOptions learned(milliseconds floor) {
  HangOptions o;
  o.mode = HangOptions::Mode::kAuto;
  o.initial_timeout = seconds(100);
  o.factor = 5;
  o.min_timeout = floor;
  return o;
}

ProgressSample beats(uint64_t n) {
  ProgressSample s;
  s.beats = n;
  return s;
}

TEST(HangMonitor, FixedTimeoutFlagsTheWorkerThatStoppedAfterItsFirstProgress) {
  HangOptions o = fixed(seconds(5));
  HangMonitor m(o);
  m.start_attempt(2, milliseconds(0));
  m.observe(0, beats(1), seconds(1));
  m.observe(1, beats(1), seconds(1));
  m.observe(0, beats(2), seconds(4));  // rank 0 goes on, rank 1 stops at 1 s
  EXPECT_FALSE(m.check(seconds(6)));
  m.observe(0, beats(3), seconds(7));
  auto stall = m.check(milliseconds(6001 + 1000));
  ASSERT_TRUE(stall);
  EXPECT_EQ(stall->local_rank, 1);
  EXPECT_EQ(stall->timeout, seconds(5));
}

TEST(HangMonitor, BeforeTheFirstProgressTheInitialTimeoutApplies) {
  HangOptions o = fixed(seconds(5));
  HangMonitor m(o);
  m.start_attempt(1, milliseconds(0));
  EXPECT_FALSE(m.check(seconds(99)));
  EXPECT_TRUE(m.check(seconds(101)));
}

TEST(HangMonitor, OutputCountsAsProgress) {
  HangOptions o = fixed(seconds(5));
  HangMonitor m(o);
  m.start_attempt(1, milliseconds(0));
  ProgressSample s;
  for (int t = 1; t <= 20; ++t) {
    s.output = static_cast<uint64_t>(t);
    m.observe(0, s, seconds(t * 2));
  }
  EXPECT_FALSE(m.check(seconds(44)));
  EXPECT_TRUE(m.check(seconds(46)));
}

TEST(HangMonitor, AutoLearnsFromTheLongestIntervalAfterWarmUp) {
  HangOptions o = learned(seconds(1));
  HangMonitor m(o);
  m.start_attempt(1, milliseconds(0));
  // The start-up interval (10 s) is not learned; steps take 200 ms, one 400 ms.
  uint64_t n = 0;
  milliseconds t = seconds(10);
  for (int step_ms : {200, 400, 200, 200}) {
    t += milliseconds(step_ms);
    m.observe(0, beats(++n), t);
  }
  EXPECT_EQ(m.longest_interval(), milliseconds(400));
  EXPECT_EQ(m.timeout_of(0), milliseconds(2000));
  EXPECT_FALSE(m.check(t + milliseconds(1999)));
  EXPECT_TRUE(m.check(t + milliseconds(2001)));
}

TEST(HangMonitor, AutoAdoptsALongerIntervalSeenElsewhereButNeverAShorterOne) {
  HangOptions o = learned(seconds(1));
  HangMonitor m(o);
  m.start_attempt(1, milliseconds(0));
  for (uint64_t n = 1; n <= 4; ++n) m.observe(0, beats(n), milliseconds(200) * n);
  EXPECT_EQ(m.timeout_of(0), milliseconds(1000));
  m.adopt_longest(milliseconds(100));
  EXPECT_EQ(m.longest_interval(), milliseconds(200));
  m.adopt_longest(milliseconds(700));
  EXPECT_EQ(m.longest_interval(), milliseconds(700));
  EXPECT_EQ(m.timeout_of(0), milliseconds(3500));
  // Learned across attempts, adopted or not.
  m.start_attempt(1, seconds(10));
  for (uint64_t n = 1; n <= 3; ++n) m.observe(0, beats(n), seconds(10) + milliseconds(100) * n);
  EXPECT_EQ(m.timeout_of(0), milliseconds(3500));
}

TEST(HangMonitor, AutoNeverGoesBelowTheFloorAndWaitsDuringWarmUp) {
  HangOptions o = learned(seconds(30));
  HangMonitor m(o);
  m.start_attempt(1, milliseconds(0));
  m.observe(0, beats(1), seconds(1));
  m.observe(0, beats(2), milliseconds(1100));
  EXPECT_EQ(m.timeout_of(0), seconds(100));  // 2 signals: still warming up
  m.observe(0, beats(3), milliseconds(1200));
  EXPECT_EQ(m.timeout_of(0), seconds(30));
}

TEST(HangMonitor, ASectionUsesItsOwnTimeoutOrNone) {
  HangOptions o = fixed(seconds(5));
  HangMonitor m(o);
  m.start_attempt(2, milliseconds(0));
  ProgressSample in_checkpoint = beats(1);
  in_checkpoint.in_section = true;
  in_checkpoint.section = "checkpoint";
  in_checkpoint.section_timeout = seconds(60);
  ProgressSample unbounded = beats(1);
  unbounded.in_section = true;
  m.observe(0, in_checkpoint, seconds(1));
  m.observe(1, unbounded, seconds(1));
  EXPECT_FALSE(m.check(seconds(60)));
  auto stall = m.check(seconds(62));
  ASSERT_TRUE(stall);
  EXPECT_EQ(stall->local_rank, 0);
  EXPECT_EQ(stall->section, "checkpoint");
  EXPECT_FALSE(m.timeout_of(1));
}

TEST(HangMonitor, OffNeverFlags) {
  HangOptions o;
  HangMonitor m(o);
  m.start_attempt(1, milliseconds(0));
  EXPECT_FALSE(m.check(std::chrono::hours(1000)));
}

TEST(HangMonitor, ChecksOftenEnoughForTheShortestTimeout) {
  HangOptions o = fixed(milliseconds(1000));
  HangMonitor m(o);
  m.start_attempt(1, milliseconds(0));
  EXPECT_EQ(m.check_interval(), milliseconds(1000));  // initial timeout: at most 1 s
  m.observe(0, beats(1), milliseconds(10));
  EXPECT_EQ(m.check_interval(), milliseconds(250));
}

}  // namespace
}  // namespace ddprun::agent
