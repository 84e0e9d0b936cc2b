// A hang in a job of thousands of ranks: what each node shares, the console's summary
// and the run's event stay bounded; the reports on disk keep every stack.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent/hang/hang_publish.h"
#include "agent/hang/hang_report.h"
#include "common/number_ranges.h"
#include "tests/helpers/scratch.h"
#include "tests/unit/quiet_observer.h"

namespace ddprun::agent {
namespace {

// A rank as a capture describes it (where and whether in a collective), with a stack
// of `stack_bytes`.
RankReport rank_at(int r, const std::string& where, bool in_collective, size_t stack_bytes) {
  RankReport rep;
  rep.rank = r;
  rep.local_rank = r % 8;
  rep.node = r / 8;
  rep.host = "h" + std::to_string(r / 8);
  rep.state = 'S';
  rep.step = 4;
  rep.where = where;
  rep.function = where.substr(0, where.find(' '));
  rep.in_collective = in_collective;
  for (int line = 0; rep.python_stack.size() < stack_bytes; ++line)
    rep.python_stack += "  File \"/job/train.py\", line " + std::to_string(line) + " in f\n";
  return rep;
}

TEST(NumberRanges, RunsOfThreeOrMoreBecomeRanges) {
  EXPECT_EQ(number_ranges({0, 1, 2, 3, 5, 7, 8}), "0-3,5,7,8");
  EXPECT_EQ(number_ranges({0, 1, 2, 3, 5, 7, 8}, /*pairs_as_ranges=*/true), "0-3,5,7-8");
  EXPECT_EQ(number_ranges({4}), "4");
  EXPECT_EQ(number_ranges({}), "");
}

// 4,096 ranks, 12 of them outside the collective the others wait in: the summary
// details the first eight culprits and lists the rest by place, in a few lines.
TEST(HangAtScale, TheSummaryListsAWholeJobsRanksByPlace) {
  std::vector<RankReport> ranks;
  for (int r = 0; r < 4096; ++r) {
    bool culprit = r >= 1000 && r < 1012;
    ranks.push_back(
        rank_at(r, culprit ? "load_batch (train.py:42)" : "all_reduce (c10d.py:1)", !culprit, 0));
  }
  HangDiagnosis d = diagnose(ranks);
  EXPECT_EQ(d.culprits.size(), 12u);
  EXPECT_NE(d.summary.find("culprit: rank 1007 "), std::string::npos) << d.summary;
  EXPECT_EQ(d.summary.find("culprit: rank 1008 "), std::string::npos) << d.summary;
  EXPECT_NE(d.summary.find("  culprit ranks 1008-1011 are in load_batch (train.py:42)\n"),
            std::string::npos)
      << d.summary;
  EXPECT_NE(d.summary.find("  ranks 0-999,1012-4095 are in all_reduce (c10d.py:1)\n"),
            std::string::npos)
      << d.summary;
  EXPECT_LT(d.summary.size(), 2048u);
}

TEST(HangAtScale, TheStacksEachNodeSharesShrinkWithTheJob) {
  EXPECT_EQ(shared_stack_bytes(2), 256u << 10);
  EXPECT_EQ(shared_stack_bytes(1024), 64u << 10);
  EXPECT_EQ(shared_stack_bytes(16384), 4u << 10);
  EXPECT_EQ(shared_stack_bytes(100000), 4u << 10);
}

// Eight ranks of 100 KiB stacks each in a job of 1,024 nodes: what the node shares is
// cut to its 64 KiB, each cut naming this node's report; small stacks go whole.
TEST(HangAtScale, ANodeSharesItsStacksCutToItsShare) {
  nlohmann::json part = nlohmann::json::array();
  for (int r = 0; r < 8; ++r) {
    RankReport rep = rank_at(r, "f (train.py:1)", true, 100 << 10);
    rep.native_stack = rep.python_stack;
    part.push_back(to_json(rep));
  }
  std::string shared = part_to_share(part.dump(), shared_stack_bytes(1024), "h0:/logs/hang.txt");
  auto back = nlohmann::json::parse(shared);
  ASSERT_EQ(back.size(), 8u);
  size_t stacks = 0;
  for (const auto& j : back) {
    RankReport r = rank_report_from_json(j);
    for (const std::string* s : {&r.python_stack, &r.native_stack}) {
      stacks += s->size();
      EXPECT_EQ(s->rfind("  File \"/job/train.py\", line 0 in f\n", 0), 0u);  // the head kept
      EXPECT_NE(s->find("bytes more; cut to share, all of it is in h0:/logs/hang.txt)\n"),
                std::string::npos);
    }
    EXPECT_EQ(r.where, "f (train.py:1)");
  }
  EXPECT_LE(stacks, (64u << 10) + 16 * 100);  // each cut's note is under 100 bytes
  nlohmann::json small = nlohmann::json::array({to_json(rank_at(0, "f", true, 2000))});
  EXPECT_EQ(part_to_share(small.dump(), shared_stack_bytes(1024), "x"), small.dump());
}

class RecordingObserver : public testing::QuietObserver {
 public:
  void hang(int, const std::string& json) override { event = json; }
  std::string event;
};

// 1,000 ranks with 16 KiB stacks: the run keeps the culprit's, one rank's of each other
// place and the first others', 16 in all (not 16 MB of stacks in one record); the file
// has every rank's.
TEST(HangAtScale, TheRunKeepsTheCulpritsStacksAndOneRankPerPlace) {
  HangWatch::Verdict v;
  for (int r = 0; r < 1000; ++r) {
    std::string where = r % 2 ? "all_reduce (c10d.py:1)" : "barrier (c10d.py:2)";
    if (r == 500) where = "load_batch (train.py:42)";
    if (r == 700) where = "recv (c10d.py:3)";
    v.ranks.push_back(rank_at(r, where, r != 500, 16 << 10));
  }
  // The culprit is on the judging node, whose own stacks come whole: 1 MiB of them.
  v.ranks[500].python_stack = rank_at(500, "", false, 1 << 20).python_stack;
  v.diagnosis = diagnose(v.ranks);
  ASSERT_EQ(v.diagnosis.culprits, std::vector<int>{500});
  v.report_at = "h0:/logs/hang_node0.txt";
  std::string path = test::scratch_dir("hang_at_scale") + "/hang_node0.txt";
  RecordingObserver run;
  publish_hang(v, "hang", "hang: rank 500", path, 0, &run);
  auto event = nlohmann::json::parse(run.event);
  std::vector<int> kept;
  for (const auto& r : event.at("ranks")) {
    kept.push_back(r.at("rank").get<int>());
    std::string stack = r.at("python_stack");
    EXPECT_FALSE(stack.empty());
    if (kept.back() != 500) continue;
    EXPECT_LT(stack.size(), 257u << 10);
    EXPECT_NE(stack.find("all of it is in h0:/logs/hang_node0.txt"), std::string::npos);
  }
  // The culprit, one rank of each other place (0, 1, 700), then the first others.
  EXPECT_EQ(kept, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 500, 700}));
  EXPECT_EQ(event.at("ranks_total"), 1000);
  EXPECT_EQ(event.at("report_at"), "h0:/logs/hang_node0.txt");
  EXPECT_LT(run.event.size(), 1u << 20);
  std::stringstream file;
  file << std::ifstream(path).rdbuf();
  EXPECT_NE(file.str().find("=== rank 999 "), std::string::npos);
  EXPECT_GT(file.str().size(), 1000u * (16 << 10));
}

}  // namespace
}  // namespace ddprun::agent
