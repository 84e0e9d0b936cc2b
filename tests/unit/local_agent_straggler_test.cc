// LocalAgent's straggler detection, driven through fakes: what a node publishes of its
// ranks' steps each window, how the judging node (group rank 0) names a slow rank of
// another node in the run, and the scores the metrics then show.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent/straggler/straggler_judge.h"
#include "tests/unit/local_agent_fixture.h"
#include "tests/unit/quiet_observer.h"

namespace ddprun::testing {
namespace {

// Keeps what straggler detection tells the run.
class StragglerObserver : public QuietObserver {
 public:
  void straggler_named(int, const std::string& data) override { named.push_back(nlohmann::json::parse(data)); }
  void straggler_scores(int, const std::string& data) override { scores.push_back(nlohmann::json::parse(data)); }

  std::vector<nlohmann::json> named, scores;
};

class LocalAgentStragglerTest : public LocalAgentTest {
 protected:
  LocalAgentStragglerTest() {
    config_.stragglers.window = 5s;
    observer_ = &observer;
  }
  /// Worker `p` has now taken `steps` steps of `step_ms` each, `own_ms` of them its own
  /// work: its progress page's step counters say so.
  static void steps(const FakeProcessLauncher::Process& p, uint64_t steps, uint64_t step_ms,
                    uint64_t own_ms) {
    std::string path = p.env("DDPRUN_PROGRESS_FILE");
    int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0) << "no progress page: " << path;
    uint64_t counters[3] = {steps, steps * step_ms * 1'000'000, steps * own_ms * 1'000'000};
    ASSERT_EQ(::pwrite(fd, counters, sizeof(counters), 96), static_cast<ssize_t>(sizeof(counters)));
    ::close(fd);
  }
  StragglerObserver observer;
};

TEST_F(LocalAgentStragglerTest, GroupRankZeroNamesASlowRankOfAnotherNodeAfterTwoWindows) {
  elastic({{"a", "b"}}, 2);
  launcher_.on_spawn = [this](const auto& p) {
    if (p.rank() != 1) return;
    auto workers = attempt(0);
    // Node b's ranks 2 and 3: rank 3 works 300 ms of its own per step, the rest 100.
    auto b = [](uint64_t n, uint64_t own3) {
      return agent::encode_part("b", {{2, n, 0.5 * static_cast<double>(n), 0.1 * static_cast<double>(n)},
                                      {3, n, 0.5 * static_cast<double>(n), own3 * static_cast<double>(n) / 1000}});
    };
    for (uint64_t window = 1; window <= 3; ++window) {
      for (const auto& w : workers) steps(w, 10 * window, 500, 100);
      journal_->others_published["straggler_steps"] = {b(10, 300)};
      clock_.advance(5s);
    }
    for (const auto& w : workers) launcher_.exit(w.pid, 0);
    round(0)->others_done = true;
  };
  EXPECT_EQ(run(), 0);
  // This node published its ranks' windows and the job's median.
  auto mine = agent::decode_part(round(0)->published.at("straggler_steps"));
  ASSERT_TRUE(mine);
  ASSERT_EQ(mine->ranks.size(), 2u);
  EXPECT_EQ(mine->ranks[1].rank, 1);
  EXPECT_EQ(mine->ranks[1].steps, 10u);
  EXPECT_NEAR(mine->ranks[1].own_per_step(), 0.1, 1e-9);
  EXPECT_NEAR(std::stod(round(0)->published.at("straggler_median")), 0.1, 1e-9);
  // Named once (after its second slow window), in the run; the scores went there too.
  ASSERT_EQ(observer.named.size(), 1u);
  EXPECT_EQ(observer.named[0]["rank"], 3);
  EXPECT_EQ(observer.named[0]["host"], "b");
  EXPECT_NEAR(observer.named[0]["score"].get<double>(), 3.0, 1e-6);
  ASSERT_FALSE(observer.scores.empty());
  EXPECT_EQ(observer.scores.back()["ranks"].size(), 4u);
}

// --straggler_action=exclude: node b's rank is a straggler; the round ends without b
// (a membership change, no restart counted), and a and c go on.
TEST_F(LocalAgentStragglerTest, ExcludeLeavesTheStragglersNodeOutWhereMinAllows) {
  elastic({{"a", "b", "c"}, {"a", "c"}}, 2);
  config_.stragglers.exclude = true;
  launcher_.on_spawn = [this](const auto& p) {
    if (p.rank() != 1) return;
    if (journal_->rounds.size() == 2) {  // the round after: a and c
      for (const auto& w : launcher_.spawned()) launcher_.exit(w.pid, 0);
      round(1)->others_done = true;
      return;
    }
    for (uint64_t window = 1; window <= 2; ++window) {
      for (const auto& w : attempt(0)) steps(w, 10 * window, 500, 100);
      journal_->others_published["straggler_steps"] = {
          agent::encode_part("b", {{2, 10, 5, 4}, {3, 10, 5, 4}}),
          agent::encode_part("c", {{4, 10, 5, 1}, {5, 10, 5, 1}})};
      clock_.advance(5s);
    }
  };
  EXPECT_EQ(run(), 0);
  ASSERT_TRUE(round(0)->written);
  EXPECT_EQ(round(0)->written->kind, rendezvous::RoundEnd::Kind::kMembership);
  EXPECT_EQ(round(0)->written->dropped, std::vector<std::string>{"b"});
  EXPECT_NE(round(0)->written->reason.find("straggler node 1 (b) left out"), std::string::npos)
      << round(0)->written->reason;
  ASSERT_EQ(round(0)->next_rounds.size(), 1u);
  EXPECT_EQ(round(0)->next_rounds[0], std::make_pair(false, std::set<std::string>{"b"}));
  EXPECT_EQ(journal_->restarts, 0);
}

TEST_F(LocalAgentStragglerTest, ExcludeKeepsTheNodeWhereTheJobWouldFallBelowMin) {
  elastic({{"a", "b"}}, 2);
  config_.stragglers.exclude = true;
  launcher_.on_spawn = [this](const auto& p) {
    if (p.rank() != 1) return;
    for (uint64_t window = 1; window <= 3; ++window) {
      for (const auto& w : attempt(0)) steps(w, 10 * window, 500, 100);
      journal_->others_published["straggler_steps"] = {agent::encode_part("b", {{2, 10, 5, 4}, {3, 10, 5, 4}})};
      clock_.advance(5s);
    }
    for (const auto& w : attempt(0)) launcher_.exit(w.pid, 0);
    round(0)->others_done = true;
  };
  EXPECT_EQ(run(), 0);
  EXPECT_FALSE(round(0)->written);  // nobody ended the round: it ran to its end
  // Named all the same, once: node b (its two ranks are in the run too).
  ASSERT_EQ(observer.named.size(), 3u);
  EXPECT_EQ(observer.named[0]["kind"], "node");
  EXPECT_EQ(observer.named[0]["host"], "b");
}

TEST_F(LocalAgentStragglerTest, AUniformJobNamesNobodyAndOffMeansNoPage) {
  launcher_.on_spawn = [this](const auto& p) {
    if (p.rank() != 1) return;
    auto workers = attempt(0);
    for (uint64_t window = 1; window <= 3; ++window) {
      for (const auto& w : workers) steps(w, 10 * window, 500, 100 + 5 * static_cast<uint64_t>(w.rank()));
      clock_.advance(5s);
    }
    for (const auto& w : workers) launcher_.exit(w.pid, 0);
  };
  EXPECT_EQ(run(), 0);
  EXPECT_TRUE(observer.named.empty());
  EXPECT_EQ(observer.scores.size(), 1u);  // the first window's, then only once a minute

  config_.stragglers.threshold = 0;
  launcher_.on_spawn = [this](const auto& p) {
    if (p.restart_count() == 0 && launcher_.spawned().size() == 4) {
      EXPECT_TRUE(p.env("DDPRUN_PROGRESS_FILE").empty());
    }
    launcher_.exit(p.pid, 0);
  };
  EXPECT_EQ(run(), 0);
}

}  // namespace
}  // namespace ddprun::testing
