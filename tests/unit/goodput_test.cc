// Goodput accounting's arithmetic: every second of a job in one category, per attempt
// and in all, from the attempts' spans.
#include <gtest/gtest.h>

#include "tracking/goodput.h"

namespace ddprun::tracking {
namespace {

TEST(Goodput, ACleanJobIsStartUpThenProductive) {
  AttemptSpan a{0, 100, std::nullopt, false, 102, 150, std::nullopt};
  Goodput g = account_goodput(100, 160, {a});
  EXPECT_TRUE(g.steps_seen);
  EXPECT_FALSE(g.checkpoint_seen);
  EXPECT_DOUBLE_EQ(g.job.startup, 2);
  EXPECT_DOUBLE_EQ(g.job.productive, 58);  // up to the job's end
  EXPECT_DOUBLE_EQ(g.job.total(), 60);
  EXPECT_NEAR(g.job.goodput(), 58.0 / 60, 1e-12);
  ASSERT_EQ(g.attempts[0].segments.size(), 2u);
  EXPECT_EQ(g.attempts[0].segments[1].category, "productive");
}

TEST(Goodput, ACrashLosesWhatCameAfterTheCheckpointAndARestartFollows) {
  // Attempt 0: first step at 2, checkpoint at 20, last step at 24, crash at 25.
  // Attempt 1: its first step at 30 (restart 25..30), then to the end at 50.
  std::vector<AttemptSpan> spans{{0, 0, 25, false, 2, 24, 20}, {1, 26, std::nullopt, false, 30, 49, 40}};
  Goodput g = account_goodput(0, 50, spans);
  EXPECT_DOUBLE_EQ(g.job.startup, 2);
  EXPECT_DOUBLE_EQ(g.job.productive, 18 + 20);
  EXPECT_DOUBLE_EQ(g.job.lost, 5);
  EXPECT_DOUBLE_EQ(g.job.restart, 5);
  EXPECT_DOUBLE_EQ(g.job.total(), 50);
  ASSERT_EQ(g.attempts.size(), 2u);
  EXPECT_DOUBLE_EQ(g.attempts[0].end, 25);
  EXPECT_DOUBLE_EQ(g.attempts[1].start, 25);
  EXPECT_DOUBLE_EQ(g.attempts[1].split.restart, 5);
  EXPECT_TRUE(g.checkpoint_seen);
}

TEST(Goodput, AHangWaitsFromTheLastStepToItsDetection) {
  std::vector<AttemptSpan> spans{{0, 0, 40, true, 1, 30, 25}, {1, 41, std::nullopt, false, 44, 60, std::nullopt}};
  Goodput g = account_goodput(0, 60, spans);
  EXPECT_DOUBLE_EQ(g.job.startup, 1);
  EXPECT_DOUBLE_EQ(g.job.productive, 24 + 16);
  EXPECT_DOUBLE_EQ(g.job.lost, 5);
  EXPECT_DOUBLE_EQ(g.job.hang_wait, 10);
  EXPECT_DOUBLE_EQ(g.job.restart, 4);
  EXPECT_DOUBLE_EQ(g.job.total(), 60);
}

TEST(Goodput, WithoutACheckpointAFailureLosesEveryStepOfItsAttempt) {
  std::vector<AttemptSpan> spans{{0, 0, 20, false, 2, 19, std::nullopt}, {1, 21, std::nullopt, false, 23, 30, std::nullopt}};
  Goodput g = account_goodput(0, 30, spans);
  EXPECT_DOUBLE_EQ(g.job.productive, 7);
  EXPECT_DOUBLE_EQ(g.job.lost, 18);
  EXPECT_NE(describe_goodput(g).find("no checkpoint declared"), std::string::npos);
}

TEST(Goodput, AFailedEndAndAnAttemptThatNeverSteppedCountAsRestart) {
  // Attempt 1 fails before its first step; attempt 2 fails too and the job ends at 40.
  std::vector<AttemptSpan> spans{{0, 0, 10, false, 1, 9, 8}, {1, 11, 15, false, std::nullopt, std::nullopt, std::nullopt},
                                 {2, 16, 30, false, 18, 29, 28}};
  Goodput g = account_goodput(0, 40, spans);
  EXPECT_DOUBLE_EQ(g.job.startup, 1);
  EXPECT_DOUBLE_EQ(g.job.productive, 7 + 10);
  EXPECT_DOUBLE_EQ(g.job.lost, 2 + 2);
  EXPECT_DOUBLE_EQ(g.job.restart, 5 + 3 + 10);
  EXPECT_DOUBLE_EQ(g.job.total(), 40);
  EXPECT_EQ(g.attempts[2].segments.back().category, "restart");  // stopping the job
}

TEST(Goodput, AnEndedJobsTeardownAfterItsLastStepIsShutdown) {
  AttemptSpan a{0, 100, std::nullopt, false, 102, 150, std::nullopt};
  Goodput g = account_goodput(100, 160, {a}, {.from_launch = true, .job_ended = true});
  EXPECT_DOUBLE_EQ(g.job.productive, 48);  // up to the last step, not the job's end
  EXPECT_DOUBLE_EQ(g.job.shutdown, 10);
  EXPECT_DOUBLE_EQ(g.job.total(), 60);
  EXPECT_NEAR(g.job.goodput(), 48.0 / 60, 1e-12);
  EXPECT_EQ(g.attempts[0].segments.back().category, "shutdown");
  EXPECT_NE(describe_goodput(g).find(", shutdown 10.0 s"), std::string::npos)
      << describe_goodput(g);
  // While it runs, its step in progress is productive.
  EXPECT_DOUBLE_EQ(account_goodput(100, 160, {a}).job.shutdown, 0);
}

TEST(Goodput, AJobThatFailsForGoodShutsDownAfterItsLastFailure) {
  std::vector<AttemptSpan> spans{{0, 0, 10, false, 1, 9, 8}, {1, 11, 30, false, 13, 29, 28}};
  Goodput g = account_goodput(0, 40, spans, {.from_launch = true, .job_ended = true});
  EXPECT_DOUBLE_EQ(g.job.restart, 3);  // 10..13 only
  EXPECT_DOUBLE_EQ(g.job.shutdown, 10);
  EXPECT_DOUBLE_EQ(g.job.total(), 40);
}

TEST(Goodput, NoStepTimedIsUnknown) {
  Goodput g = account_goodput(0, 10, {{0, 0, std::nullopt, false, std::nullopt, std::nullopt, std::nullopt}});
  EXPECT_FALSE(g.steps_seen);
  EXPECT_DOUBLE_EQ(g.job.startup, 10);
  EXPECT_NE(describe_goodput(g).find("goodput unknown"), std::string::npos);
  EXPECT_DOUBLE_EQ(account_goodput(0, 10, {}).job.total(), 10);
}

}  // namespace
}  // namespace ddprun::tracking
