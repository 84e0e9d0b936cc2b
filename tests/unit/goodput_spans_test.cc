// The agent's goodput component: what it tells the run of its ranks' steps, and its own
// view of the job's time (what /metrics serves) over attempts, on a wall clock the test
// moves.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "agent/goodput/goodput_spans.h"
#include "tests/fakes/fake_worker_progress.h"
#include "tests/fakes/manual_clock.h"
#include "tests/unit/quiet_observer.h"

namespace ddprun::agent {
namespace {

using rendezvous::RoundEnd;
using namespace std::chrono_literals;

class MarksObserver : public testing::QuietObserver {
 public:
  void steps_marked(int node, int attempt, const std::string& data_json) override {
    marks.push_back({node, attempt, nlohmann::json::parse(data_json)});
  }
  struct Mark {
    int node;
    int attempt;
    nlohmann::json data;
  };
  std::vector<Mark> marks;
};

int64_t us(double s) { return static_cast<int64_t>(s * 1e6); }

class GoodputSpansTest : public ::testing::Test {
 protected:
  rendezvous::RendezvousInfo attempt(int restart_count) {
    rendezvous::RendezvousInfo info;
    info.restart_count = restart_count;
    info.group_rank = 1;
    info.first_rank = 2;
    return info;
  }
  void step(int local_rank, double first, double last) {
    auto& m = workers_.pages.at(static_cast<size_t>(local_rank)).marks;
    m.first_step_us = us(first);
    m.last_step_us = us(last);
    workers_.pages.at(static_cast<size_t>(local_rank)).timed.steps += 1;
  }

  double wall_ = 100;
  testing::FakeWorkerProgress workers_{2};
  testing::ManualClock clock_;
  MarksObserver observer_;
  GoodputSpans goodput_{2, "", workers_, clock_, &observer_, [this] { return wall_; }};
};

TEST_F(GoodputSpansTest, NothingIsSaidBeforeAStepIsTimed) {
  goodput_.begin_attempt(attempt(0));
  wall_ = 110;
  EXPECT_FALSE(goodput_.split(std::nullopt));
  goodput_.end_attempt(std::nullopt);
  EXPECT_TRUE(observer_.marks.empty());  // no rank stepped: nothing to tell
}

TEST_F(GoodputSpansTest, ARunningAttemptIsStartUpThenProductive) {
  goodput_.begin_attempt(attempt(0));
  step(0, 102, 109);
  step(1, 103, 110);
  wall_ = 110;
  auto s = goodput_.split(std::nullopt);
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ(s->startup, 2);  // to the earliest first step of its ranks
  EXPECT_DOUBLE_EQ(s->productive, 8);
  EXPECT_DOUBLE_EQ(s->total(), 10);
}

TEST_F(GoodputSpansTest, AFailedRoundIsSettledAtItsEndAndTheNextOneWaitsAsARestart) {
  goodput_.begin_attempt(attempt(0));
  step(0, 102, 120);
  wall_ = 121;
  goodput_.round_ends();  // the failure: work after the last durable point is lost
  wall_ = 125;
  goodput_.round_ends();  // only the first counts
  RoundEnd failed{RoundEnd::Kind::kRestart, 1, "rank 2 exited with 1"};
  goodput_.end_attempt(failed);
  goodput_.begin_attempt(attempt(1));
  workers_.pages = std::vector<ProgressSample>(2);
  step(0, 130, 140);
  wall_ = 140;
  auto s = goodput_.split(std::nullopt);
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ(s->startup, 2);
  EXPECT_DOUBLE_EQ(s->lost, 19);    // no checkpoint: attempt 0's every step
  EXPECT_DOUBLE_EQ(s->restart, 9);  // the failure at 121 to the next first step at 130
  EXPECT_DOUBLE_EQ(s->productive, 10);
  EXPECT_DOUBLE_EQ(s->total(), 40);
}

TEST_F(GoodputSpansTest, TheRunIsToldEachRanksMarksAtTheEndAndWhileItRuns) {
  goodput_.begin_attempt(attempt(3));
  step(1, 101, 105);
  workers_.pages[1].marks.checkpoint_us = us(104);
  workers_.pages[1].marks.checkpoint_step = 40;
  clock_.advance(GoodputSpans::kMarksEvery);
  ASSERT_EQ(observer_.marks.size(), 1u);
  const auto& m = observer_.marks[0];
  EXPECT_EQ(m.node, 1);
  EXPECT_EQ(m.attempt, 3);
  ASSERT_EQ(m.data["ranks"].size(), 1u);  // rank 2 never stepped
  EXPECT_EQ(m.data["ranks"][0]["rank"], 3);
  EXPECT_EQ(m.data["ranks"][0]["checkpoint_step"], 40);
  clock_.advance(GoodputSpans::kMarksEvery);
  EXPECT_EQ(observer_.marks.size(), 2u);  // again, every kMarksEvery
  goodput_.end_attempt(std::nullopt);
  EXPECT_EQ(observer_.marks.size(), 3u);
  EXPECT_EQ(clock_.pending(), 0u);  // the attempt's watch ended with it
}

}  // namespace
}  // namespace ddprun::agent
