#include "launcher/value_parsers.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace ddprun::launcher {
namespace {

using agent::Std;

TEST(ParseNnodes, SingleAndRange) {
  EXPECT_EQ(parse_nnodes("--nnodes", "4"), std::make_pair(4, 4));
  EXPECT_EQ(parse_nnodes("--nnodes", "2:8"), std::make_pair(2, 8));
}

TEST(ParseNnodes, RejectsBadValues) {
  for (const char* bad : {"", "0", "0:2", "3:2", "a", "1:", ":2", "1:2:3", "-1", "1.5"}) {
    EXPECT_THROW(parse_nnodes("--nnodes", bad), UsageError) << bad;
  }
}

TEST(ParseStdSpec, DigitAndMap) {
  EXPECT_EQ(parse_std_spec("-t", "3").all, Std::kAll);
  auto spec = parse_std_spec("-t", "0:1,2:2");
  EXPECT_EQ(spec.for_rank(0), Std::kOut);
  EXPECT_EQ(spec.for_rank(1), Std::kNone);
  EXPECT_EQ(spec.for_rank(2), Std::kErr);
  for (const char* bad : {"4", "x", "0:", "a:1", "0:9", "-1"}) {
    EXPECT_THROW(parse_std_spec("-t", bad), UsageError) << bad;
  }
}

// Nothing redirected or tee'd for any rank: the temporary log directory may be in memory.
TEST(ParseStdSpec, NoneMeansNoRankGetsAnything) {
  EXPECT_TRUE(parse_std_spec("-t", "0").none());
  EXPECT_FALSE(parse_std_spec("-t", "1").none());
  EXPECT_TRUE(parse_std_spec("-t", "0:0,1:0").none());
  EXPECT_FALSE(parse_std_spec("-t", "0:0,1:2").none());
}

TEST(ParseKeyValues, PairsAndErrors) {
  auto kv = parse_key_values("--rdzv_conf", "join_timeout=5, is_host=1");
  EXPECT_EQ(kv.at("join_timeout"), "5");
  EXPECT_EQ(kv.at("is_host"), "1");
  EXPECT_TRUE(parse_key_values("--rdzv_conf", "").empty());
  EXPECT_THROW(parse_key_values("--rdzv_conf", "a=1,b"), UsageError);
  EXPECT_THROW(parse_key_values("--rdzv_conf", "=1"), UsageError);
}

TEST(ParseSeconds, FractionsAndLimits) {
  EXPECT_EQ(parse_seconds("--x", "0.25", false).count(), 250);
  EXPECT_EQ(parse_seconds("--x", "0", true).count(), 0);
  EXPECT_THROW(parse_seconds("--x", "0", false), UsageError);
  EXPECT_THROW(parse_seconds("--x", "-1", true), UsageError);
  EXPECT_THROW(parse_seconds("--x", "nan", true), UsageError);
  EXPECT_THROW(parse_seconds("--x", "5s", true), UsageError);
}

TEST(ParseRankList, Values) {
  EXPECT_EQ(parse_rank_list("--f", "0,2"), (std::set<int>{0, 2}));
  EXPECT_TRUE(parse_rank_list("--f", "").empty());
  EXPECT_THROW(parse_rank_list("--f", "0,,1"), UsageError);
}

TEST(ParseBoolAndInt, Values) {
  EXPECT_TRUE(parse_bool("PET_X", "TRUE"));
  EXPECT_FALSE(parse_bool("PET_X", "0"));
  EXPECT_THROW(parse_bool("PET_X", "yes please"), UsageError);
  EXPECT_EQ(parse_int("--n", "12"), 12);
  EXPECT_THROW(parse_int("--n", "99999999999"), UsageError);
}

TEST(Errors, NameTheFlagAndValue) {
  try {
    parse_nnodes("PET_NNODES", "5:1");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "PET_NNODES=5:1: MIN is larger than MAX");
  }
}

}  // namespace
}  // namespace ddprun::launcher
