// Crash loops: whether restarts after failures get anywhere (--max_no_progress_restarts).
#include <gtest/gtest.h>

#include "agent/restart_progress.h"

namespace ddprun::agent {
namespace {

TEST(RestartProgress, FailuresThatGetNoFurtherAreCountedInARow) {
  RestartProgress p;
  EXPECT_EQ(p.failed(0, 25, 25), 0);  // the first failure: a baseline
  EXPECT_EQ(p.failed(1, 25, 5), 1);   // resumed at 20, failed at 25 again
  EXPECT_EQ(p.failed(2, 24, 4), 2);
  EXPECT_NE(p.why().find("past step 25"), std::string::npos);
  EXPECT_EQ(p.failed(3, 30, 10), 0);  // further: the count starts over
  EXPECT_EQ(p.failed(4, 30, 0), 1);
}

TEST(RestartProgress, WithoutStepNumbersAnAttemptThatTimedNoStepGotNowhere) {
  RestartProgress p;
  EXPECT_EQ(p.failed(0, std::nullopt, 12), 0);
  EXPECT_EQ(p.failed(1, std::nullopt, 3), 0);  // it stepped: progress as far as is known
  EXPECT_EQ(p.failed(2, std::nullopt, 0), 1);
  EXPECT_EQ(p.failed(3, std::nullopt, 0), 2);
  EXPECT_EQ(p.why(), "timed no step");
}

TEST(RestartProgress, AProgramThatReportsNoStepIsNeverJudged) {
  RestartProgress p;
  for (int attempt = 0; attempt < 10; ++attempt) EXPECT_EQ(p.failed(attempt, std::nullopt, 0), 0);
}

}  // namespace
}  // namespace ddprun::agent
