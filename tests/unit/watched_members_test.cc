#include "rendezvous/round/watched_members.h"

#include <gtest/gtest.h>

#include <map>

namespace ddprun::rendezvous {
namespace {

using Members = std::vector<std::string>;

TEST(WatchedMembers, GroupRankZeroWatchesEveryOtherMember) {
  EXPECT_EQ(watched_members({"a", "b", "c", "d"}, 0), (Members{"b", "c", "d"}));
}

TEST(WatchedMembers, OthersWatchGroupRankZeroAndTheNextRank) {
  Members m{"a", "b", "c", "d"};
  EXPECT_EQ(watched_members(m, 1), (Members{"a", "c"}));
  EXPECT_EQ(watched_members(m, 2), (Members{"a", "d"}));
  EXPECT_EQ(watched_members(m, 3), (Members{"a", "b"})) << "the next after the last is rank 1";
  EXPECT_EQ(watched_members({"a", "b"}, 1), (Members{"a"}));
}

TEST(WatchedMembers, ARoundOfOneOrAStrangerWatchesNobody) {
  EXPECT_TRUE(watched_members({"a"}, 0).empty());
  EXPECT_TRUE(watched_members({"a", "b"}, -1).empty());
  EXPECT_TRUE(watched_members({"a", "b"}, 2).empty());
}

// Every member is watched by group rank 0 and by at least one other node (rank 0 by
// all), and the reads of a round grow linearly: under 3 per member.
TEST(WatchedMembers, EveryMemberIsWatchedTwiceAndTheReadsGrowLinearly) {
  for (int n : {2, 3, 8, 1000}) {
    Members m;
    for (int i = 0; i < n; ++i) m.push_back("n" + std::to_string(i));
    std::map<std::string, int> watchers;
    size_t reads = 0;
    for (int self = 0; self < n; ++self) {
      auto w = watched_members(m, self);
      reads += w.size();
      for (const auto& x : w) {
        EXPECT_NE(x, m[static_cast<size_t>(self)]) << "nobody watches itself";
        ++watchers[x];
      }
    }
    EXPECT_EQ(watchers[m[0]], n - 1) << n;
    for (int i = 1; i < n; ++i) EXPECT_GE(watchers[m[static_cast<size_t>(i)]], n > 2 ? 2 : 1) << n;
    EXPECT_LT(reads, static_cast<size_t>(3 * n)) << n;
  }
}

}  // namespace
}  // namespace ddprun::rendezvous
