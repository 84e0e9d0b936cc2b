// Straggler detection's pure logic: windows of the ranks' step counters, the parts the
// nodes share, and the judge that names the rank (or node) that slows the job.
#include <gtest/gtest.h>

#include "agent/straggler/straggler_judge.h"

namespace ddprun::agent {
namespace {

using std::chrono::milliseconds;

RankSteps steps(int rank, uint64_t n, double own_per_step, double step = 0.5) {
  return {rank, n, step * static_cast<double>(n), own_per_step * static_cast<double>(n)};
}

// Parts of `nodes` nodes of `per_node` ranks each, every rank with `own` seconds of its
// own work per step except those in `slow` (rank -> own).
std::vector<std::string> parts(int nodes, int per_node, double own, std::map<int, double> slow = {}) {
  std::vector<std::string> out;
  for (int n = 0; n < nodes; ++n) {
    std::vector<RankSteps> ranks;
    for (int i = 0; i < per_node; ++i) {
      int rank = n * per_node + i;
      ranks.push_back(steps(rank, 10, slow.count(rank) ? slow[rank] : own));
    }
    out.push_back(encode_part("10.0.0." + std::to_string(n + 1), ranks));
  }
  return out;
}

TEST(StepWindows, GiveWhatEachRankDidSinceTheLastWindow) {
  StepWindows w;
  w.start_attempt(2, 8);
  EXPECT_EQ(w.take(0, {3, 3'000'000'000, 1'500'000'000}).steps, 3u);
  RankSteps r = w.take(0, {5, 4'000'000'000, 1'600'000'000});
  EXPECT_EQ(r.rank, 8);
  EXPECT_EQ(r.steps, 2u);
  EXPECT_DOUBLE_EQ(r.step_seconds, 1.0);
  EXPECT_DOUBLE_EQ(r.own_seconds, 0.1);
  EXPECT_EQ(w.take(1, {}).rank, 9);
  EXPECT_EQ(w.take(1, {}).steps, 0u);
  // Counters that went back (a torn read, a fresh page) start over: no negative window.
  EXPECT_EQ(w.take(0, {1, 1, 1}).steps, 0u);
  EXPECT_EQ(w.take(0, {2, 2, 2}).steps, 1u);
  w.start_attempt(1, 0);
  EXPECT_EQ(w.take(0, {4, 4, 4}).steps, 4u);
}

TEST(StepWindows, PartsRoundTripAndBadOnesAreRefused) {
  auto text = encode_part("h1", {steps(3, 4, 0.25), steps(4, 0, 0.1)});
  EXPECT_EQ(text, "h1\n3 4 2000000000 1000000000");  // a rank without steps is left out
  auto part = decode_part(text);
  ASSERT_TRUE(part);
  EXPECT_EQ(part->host, "h1");
  ASSERT_EQ(part->ranks.size(), 1u);
  EXPECT_DOUBLE_EQ(part->ranks[0].own_per_step(), 0.25);
  EXPECT_FALSE(decode_part(""));
  EXPECT_FALSE(decode_part("h1\n3 4 x 1"));
  EXPECT_FALSE(decode_part("h1\n3 4 1"));
  EXPECT_FALSE(decode_part("h1\n3 4 1 1 9"));
  EXPECT_FALSE(decode_part("h1\n3 0 1 1"));
  EXPECT_FALSE(decode_part("h1\n-3 4 1 1x"));
}

TEST(StragglerJudge, UniformJobNamesNobody) {
  StragglerJudge judge({1.3, 2});
  for (int w = 0; w < 5; ++w) {
    auto v = judge.judge(parts(4, 8, 0.2, {{5, 0.21}, {17, 0.19}}), milliseconds(w * 1000));
    EXPECT_NEAR(v.median_own, 0.2, 1e-9);
    ASSERT_EQ(v.ranks.size(), 32u);
    for (const auto& s : v.ranks) EXPECT_FALSE(s.straggler) << s.rank;
    for (const auto& s : v.nodes) EXPECT_FALSE(s.straggler) << s.node;
  }
}

TEST(StragglerJudge, NamesASlowRankAfterWindowsInARowThenRepeatsOnlyAfterAWhile) {
  StragglerJudge judge({1.3, 2, milliseconds(60'000)});
  auto slow = parts(2, 4, 0.1, {{6, 0.3}});
  auto v = judge.judge(slow, milliseconds(0));
  EXPECT_FALSE(v.ranks[6].straggler);  // once is not yet consistently
  v = judge.judge(slow, milliseconds(1000));
  ASSERT_TRUE(v.ranks[6].straggler);
  EXPECT_TRUE(v.ranks[6].say);
  EXPECT_NEAR(v.ranks[6].score, 3.0, 1e-9);
  EXPECT_EQ(v.ranks[6].node, 1);
  EXPECT_EQ(v.ranks[6].host, "10.0.0.2");
  // Its node's other ranks are fine: the node is not a straggler.
  EXPECT_FALSE(v.nodes[1].straggler);
  v = judge.judge(slow, milliseconds(2000));
  EXPECT_TRUE(v.ranks[6].straggler);
  EXPECT_FALSE(v.ranks[6].say);  // rate-limited
  v = judge.judge(slow, milliseconds(62'000));
  EXPECT_TRUE(v.ranks[6].say);
  v = judge.judge(parts(2, 4, 0.1), milliseconds(63'000));
  EXPECT_FALSE(v.ranks[6].straggler);
  EXPECT_EQ(v.recovered, std::vector<int>{6});
  v = judge.judge(parts(2, 4, 0.1), milliseconds(64'000));
  EXPECT_TRUE(v.recovered.empty());
}

TEST(StragglerJudge, NamesANodeOnlyWhenMostOfItsRanksAreSlow) {
  StragglerJudge judge({1.3, 1});
  auto v = judge.judge(parts(2, 2, 0.1, {{3, 0.3}}), milliseconds(0));
  EXPECT_TRUE(v.ranks[3].straggler);
  EXPECT_FALSE(v.nodes[1].straggler);
}

TEST(StragglerJudge, NamesAWholeSlowNode) {
  StragglerJudge judge({1.3, 1});
  auto v = judge.judge(parts(3, 2, 0.1, {{4, 0.2}, {5, 0.25}}), milliseconds(0));
  EXPECT_TRUE(v.ranks[4].straggler);
  EXPECT_TRUE(v.ranks[5].straggler);
  ASSERT_EQ(v.nodes.size(), 3u);
  EXPECT_TRUE(v.nodes[2].straggler);
  EXPECT_NEAR(v.nodes[2].score, 2.0, 1e-9);  // the lower of its two ranks' scores
  EXPECT_EQ(v.nodes[2].host, "10.0.0.3");
  EXPECT_FALSE(v.nodes[0].straggler);
}

TEST(StragglerJudge, TinyOwnWorkIsNoiseAndMissingPartsAreLeftOut) {
  StragglerJudge judge({1.3, 1});
  // 50 us against 150 us of own work per step: under the 1 ms floor, nobody named.
  auto v = judge.judge(parts(2, 2, 0.00005, {{3, 0.00015}}), milliseconds(0));
  EXPECT_FALSE(v.ranks[3].straggler);
  auto some = parts(3, 1, 0.1, {{2, 0.5}});
  some[1] = "";        // a node that did not share in time
  some.push_back("garbage\nnot a line");
  v = judge.judge(some, milliseconds(0));
  ASSERT_EQ(v.ranks.size(), 2u);
  EXPECT_EQ(v.ranks[1].rank, 2);
  // With two ranks left the median is their middle: the slow one is still 1.67x it.
  EXPECT_TRUE(v.ranks[1].straggler);
  // One rank alone is judged against nobody.
  EXPECT_EQ(judge.judge(parts(1, 1, 0.1), milliseconds(0)).median_own, 0);
}

}  // namespace
}  // namespace ddprun::agent
