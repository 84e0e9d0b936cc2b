// Which rendezvous keys outlive their use once a round formed, and that only those go.
#include <gtest/gtest.h>

#include "rendezvous/round/round_history.h"

namespace ddprun::rendezvous {
namespace {

const std::string kPrefix = "/torchelastic/agent/c10d/job/";

TEST(RoundHistory, KeysOfRoundsBeforeTheLastOneAreHistory) {
  // Round 5 formed: round 4 just ended (a slow node may still read its end), 3 is history.
  EXPECT_TRUE(is_history(kPrefix + "round/3/over", kPrefix, 5, 0, 0));
  EXPECT_TRUE(is_history(kPrefix + "round/0/done/1", kPrefix, 5, 0, 0));
  EXPECT_TRUE(is_history(kPrefix + "round/3/gather/hang/0", kPrefix, 5, 0, 0));
  EXPECT_TRUE(is_history(kPrefix + "joining/2/10.0.0.1/0000000042/5000", kPrefix, 5, 0, 0));
  EXPECT_FALSE(is_history(kPrefix + "round/4/over", kPrefix, 5, 0, 0));
  EXPECT_FALSE(is_history(kPrefix + "round/5/done/0", kPrefix, 5, 0, 0));
  EXPECT_FALSE(is_history(kPrefix + "joining/4/10.0.0.1/0000000042/5000", kPrefix, 5, 0, 0));
  EXPECT_FALSE(is_history(kPrefix + "joining/6/10.0.0.1/0000000042/5000", kPrefix, 5, 0, 0));
}

TEST(RoundHistory, OnlyLongPassedWakeUpKeysAreHistory) {
  int64_t version = 100, epoch = 40;
  EXPECT_TRUE(is_history(kPrefix + "ver/1", kPrefix, 9, version, epoch));
  EXPECT_TRUE(is_history(kPrefix + "ver/" + std::to_string(version - kWakeKeysKept), kPrefix, 9,
                         version, epoch));
  EXPECT_FALSE(is_history(kPrefix + "ver/" + std::to_string(version - kWakeKeysKept + 1), kPrefix,
                          9, version, epoch));
  EXPECT_FALSE(is_history(kPrefix + "ver/100", kPrefix, 9, version, epoch));
  EXPECT_TRUE(is_history(kPrefix + "epoch/3", kPrefix, 9, version, epoch));
  EXPECT_FALSE(is_history(kPrefix + "epoch/39", kPrefix, 9, version, epoch));
  // No counter yet: nothing is judged old.
  EXPECT_FALSE(is_history(kPrefix + "ver/1", kPrefix, 9, -1, -1));
}

TEST(RoundHistory, TheStateItsCountersAndOtherKeysStay) {
  for (std::string key : {"state", "version", "epoch", "primary", "hb/10.0.0.1/0000000042/5000",
                          "round/x/over", "round/3", "ver/", "ver/12a", "epoch/-1", "tracking"}) {
    EXPECT_FALSE(is_history(kPrefix + key, kPrefix, 50, 1000, 1000)) << key;
  }
  // Another run's keys are never touched.
  EXPECT_FALSE(is_history("/torchelastic/agent/c10d/other/round/1/over", kPrefix, 50, 1000, 1000));
  EXPECT_FALSE(
      is_history("/torchelastic/agent/c10d/job/x/round/1/over", kPrefix + "x", 50, 1000, 1000));
}

TEST(RoundHistory, ForgettingReadsTheCountersFromTheStoreAndKeepsTheRest) {
  store::KeyValueTable table;
  table.set(kPrefix + "state", "{}");
  table.set(kPrefix + "version", "40");
  table.set(kPrefix + "epoch", "10");
  for (int v = 1; v <= 40; ++v) table.set(kPrefix + "ver/" + std::to_string(v), "1");
  for (int e = 1; e <= 10; ++e) table.set(kPrefix + "epoch/" + std::to_string(e), "1");
  for (int r = 0; r <= 7; ++r) {
    table.set(kPrefix + "round/" + std::to_string(r) + "/over", "x");
    table.set(kPrefix + "round/" + std::to_string(r) + "/done/0", "1");
  }
  table.set("/workers/key", "kept");
  size_t gone = forget_history(table, kPrefix, 7);
  EXPECT_EQ(gone, static_cast<size_t>((40 - kWakeKeysKept) + 6 * 2));
  EXPECT_FALSE(table.contains(kPrefix + "ver/" + std::to_string(40 - kWakeKeysKept)));
  EXPECT_TRUE(table.contains(kPrefix + "ver/" + std::to_string(41 - kWakeKeysKept)));
  EXPECT_TRUE(table.contains(kPrefix + "epoch/1"));  // 10 is within the kept window
  EXPECT_FALSE(table.contains(kPrefix + "round/5/over"));
  EXPECT_TRUE(table.contains(kPrefix + "round/6/over"));
  EXPECT_TRUE(table.contains(kPrefix + "round/7/done/0"));
  EXPECT_TRUE(table.contains(kPrefix + "state"));
  EXPECT_TRUE(table.contains("/workers/key"));
  EXPECT_EQ(forget_history(table, kPrefix, 7), 0u);
}

}  // namespace
}  // namespace ddprun::rendezvous
