// A member's seat in a completed round: what the writer of the round gives each member.
#include "rendezvous/join/round_seat.h"

#include <gtest/gtest.h>

#include "store/store.h"

namespace ddprun::rendezvous {
namespace {

DynamicState four_nodes() {
  DynamicState s;
  s.round = 3;
  s.restarts = 2;
  s.complete = true;
  s.participants = {{"a", 8}, {"b", 4}, {"c", 8}, {"d", 2}};
  s.spares = {{"e", 8}};
  s.quarantined["10.0.0.9"] = {1234, 1, "preflight: disk\nfull"};
  return s;
}

TEST(RoundSeat, EachMemberHasItsRanksAndTheMembersItChecks) {
  auto seats = seats_of(four_nodes());
  ASSERT_EQ(seats.size(), 4u);
  std::vector<int> first_ranks;
  for (size_t k = 0; k < seats.size(); ++k) {
    RoundSeat s = RoundSeat::decode(seats[k].second);
    EXPECT_EQ(s.group_rank, static_cast<int>(k));
    EXPECT_EQ(s.group_world_size, 4);
    EXPECT_EQ(s.world_size, 22);
    EXPECT_EQ(s.restarts, 2);
    EXPECT_EQ(s.host, "a");
    EXPECT_EQ(s.spares, (std::vector<std::string>{"e"}));
    EXPECT_EQ(s.quarantined.at("10.0.0.9").reason, "preflight: disk\nfull");
    first_ranks.push_back(s.first_rank);
  }
  EXPECT_EQ(first_ranks, (std::vector<int>{0, 8, 12, 20}));
  using Watched = std::vector<std::pair<int, std::string>>;
  EXPECT_EQ(RoundSeat::decode(seats[0].second).watched, (Watched{{1, "b"}, {2, "c"}, {3, "d"}}));
  EXPECT_EQ(RoundSeat::decode(seats[1].second).watched, (Watched{{0, "a"}, {2, "c"}}));
  EXPECT_EQ(RoundSeat::decode(seats[3].second).watched, (Watched{{0, "a"}, {1, "b"}}));
  EXPECT_EQ(seats[2].first, "c");
}

TEST(RoundSeat, OneSeatIsThatOfEveryMembersSeats) {
  DynamicState s = four_nodes();
  auto seats = seats_of(s);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(seat_in(s, {"a", "b", "c", "d"}, k), RoundSeat::decode(seats[k].second));
  }
}

TEST(RoundSeat, ASeatThatIsNotOneIsAStoreErrorSayingSo) {
  for (const char* bad : {"", "{}", "[1]", R"({"restarts":0,"rank":2,"nodes":2,"first_rank":0,
      "world_size":1,"host":"a","watched":[],"spares":[],"quarantined":[]})"}) {
    try {
      RoundSeat::decode(bad);
      ADD_FAILURE() << "decoded: " << bad;
    } catch (const StoreError& e) {
      EXPECT_NE(std::string(e.what()).find("rendezvous seat"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace ddprun::rendezvous
