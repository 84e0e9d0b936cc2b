// The agent's straggler component for one attempt, over a fake round and fake progress
// pages: what a node publishes each window, what the judging node names, what it asks
// the agent to leave out, and what /metrics reads.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "agent/straggler/straggler_watch.h"
#include "tests/fakes/fake_rendezvous.h"
#include "tests/fakes/fake_worker_progress.h"
#include "tests/fakes/manual_clock.h"
#include "tests/unit/quiet_observer.h"

namespace ddprun::agent {
namespace {

using namespace std::chrono_literals;

class NamesObserver : public testing::QuietObserver {
 public:
  void straggler_named(int, const std::string& data) override {
    named.push_back(nlohmann::json::parse(data));
  }
  void straggler_scores(int, const std::string& data) override {
    scores.push_back(nlohmann::json::parse(data));
  }
  std::vector<nlohmann::json> named, scores;
};

class StragglerWatchTest : public ::testing::Test {
 protected:
  StragglerWatchTest() {
    config_.spec.local_world_size = 2;
    config_.stragglers.window = 5s;
    info_.members = {"a", "b"};
    info_.group_world_size = 2;
    info_.count_ranks({2, 2});
    round_journal_->info = info_;
    round_journal_->io = &io_;
  }
  std::unique_ptr<StragglerWatch> watch() {
    return std::make_unique<StragglerWatch>(
        config_, info_, "a", round_, workers_, clock_, &observer_,
        [this](const StragglerJudge::Score& worst, const std::string& member) {
          excluded_.emplace_back(member, worst.rank);
        });
  }
  // This node's ranks have taken `n` steps of 500 ms, 100 ms of them their own work;
  // node b's rank 3 works `own3_ms` of its own per step.
  void window(uint64_t n, uint64_t own3_ms) {
    for (auto& page : workers_.pages) page.timed = {n, n * 500'000'000, n * 100'000'000};
    auto per = [n](double s) { return s * static_cast<double>(n); };
    rdzv_.others_published["straggler_steps"] = {
        encode_part("b", {{2, n, per(0.5), per(0.1)}, {3, n, per(0.5), per(own3_ms / 1000.0)}})};
    clock_.advance(5s);
  }

  AgentConfig config_;
  rendezvous::RendezvousInfo info_;
  boost::asio::io_context io_;
  testing::ManualClock clock_;
  testing::FakeWorkerProgress workers_{2};
  NamesObserver observer_;
  testing::FakeRendezvousJournal rdzv_;
  std::shared_ptr<testing::FakeRoundJournal> round_journal_ =
      std::make_shared<testing::FakeRoundJournal>();
  testing::FakeRound round_{round_journal_, rdzv_};
  std::vector<std::pair<std::string, int>> excluded_;  // (member, rank)
};

TEST_F(StragglerWatchTest, NamesASlowRankOfAnotherNodeAfterTwoWindowsAndScoresIt) {
  auto w = watch();
  window(10, 300);
  EXPECT_TRUE(observer_.named.empty());  // one slow window is not enough
  EXPECT_NEAR(*w->own_per_step(1), 0.1, 1e-9);
  EXPECT_NEAR(std::stod(round_journal_->published.at("straggler_median")), 0.1, 1e-9);
  window(20, 300);
  ASSERT_EQ(observer_.named.size(), 1u);
  EXPECT_EQ(observer_.named[0]["rank"], 3);
  EXPECT_EQ(observer_.named[0]["host"], "b");
  EXPECT_NEAR(*w->score(0), 1.0, 1e-6);  // this node's ranks are at the median
  ASSERT_FALSE(observer_.scores.empty());
  EXPECT_TRUE(excluded_.empty());  // only named: --straggler_action=warn
}

TEST_F(StragglerWatchTest, AsksTheAgentToLeaveTheStragglersNodeOutWithExclude) {
  config_.stragglers.exclude = true;
  auto w = watch();
  window(10, 300);
  window(20, 300);
  ASSERT_EQ(excluded_.size(), 1u);
  EXPECT_EQ(excluded_[0].first, "b");
  // Refused by the agent (too few nodes): it stays, and is not asked about again.
  w->refuse(1, "b", "too few");
  window(30, 300);
  window(40, 300);
  EXPECT_EQ(excluded_.size(), 1u);
}

TEST_F(StragglerWatchTest, NoWindowOnceTheWorkersAreGoneOrStopped) {
  auto w = watch();
  workers_.is_running = false;
  window(10, 300);
  EXPECT_EQ(round_journal_->published.count("straggler_steps"), 0u);
  EXPECT_FALSE(w->own_per_step(0));
  EXPECT_FALSE(w->score(0));
  w->stop();
  EXPECT_EQ(clock_.pending(), 0u);
}

TEST_F(StragglerWatchTest, AJobOfOneRankHasNoWindow) {
  info_.world_size = 1;
  auto w = watch();
  EXPECT_EQ(clock_.pending(), 0u);
}

}  // namespace
}  // namespace ddprun::agent
