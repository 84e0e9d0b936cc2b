// The job's membership as `runs show` tells it: one line per change, nodes by host.
#include "tracking/membership_story.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace ddprun::tracking {
namespace {

Event formed(double wall, int round, std::vector<std::string> members,
             std::vector<std::string> spares = {}, nlohmann::json quarantined = nullptr) {
  nlohmann::json d{{"round", round}, {"members", members}};
  if (!spares.empty()) d["spares"] = spares;
  if (!quarantined.is_null()) d["quarantined"] = quarantined;
  return {wall, "rendezvous", -1, -1, round, d.dump()};
}

Event ended(double wall, const std::string& reason) {
  return {wall, "restart", -1,
          -1,   0,         nlohmann::json{{"kind", "membership"}, {"reason", reason}}.dump()};
}

std::vector<std::string> story(const std::vector<Event>& rounds, const std::vector<Event>& ends,
                               double start) {
  return read_membership(rounds, ends, start).story;
}

const std::string kA = "10.0.0.1/0000000011/1", kB = "10.0.0.2/0000000022/1",
                  kS = "10.0.0.9/0000000099/1";

TEST(MembershipStory, ASpareTakesALostNodesPlace) {
  auto lines = story({formed(100, 0, {kA, kB}, {kS}), formed(112.5, 1, {kA, kS})},
                     {ended(110, "lost node(s) 10.0.0.2; 1 spare(s) waiting")}, 100);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "+12.5 s round 1: lost node(s) 10.0.0.2; 1 spare(s) waiting; spare 10.0.0.9 took the "
            "place of 10.0.0.2");
}

TEST(MembershipStory, ARestartWithTheSameMembersIsNoChange) {
  EXPECT_TRUE(
      story({formed(0, 0, {kA, kB}), formed(5, 1, {kA, kB})}, {ended(4, "worker group failed")}, 0)
          .empty());
}

TEST(MembershipStory, NodesKeptOutJoinedAndLeftAreEachSaid) {
  nlohmann::json q =
      nlohmann::json::array({{{"node", kB}, {"until", 4e9}, {"reason", "2 failures"}}});
  auto lines = story(
      {formed(0, 0, {kA, kB}), formed(10, 1, {kA}, {}, q), formed(20, 2, {kA, kS}, {}, q)}, {}, 0);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("+10.0 s round 1: 10.0.0.2 left; 10.0.0.2 kept out until "),
            std::string::npos)
      << lines[0];
  EXPECT_NE(lines[0].find(" (2 failures)"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[1], "+20.0 s round 2: 10.0.0.9 joined") << "the same quarantine is said once";
}

TEST(MembershipStory, AgentsSharingAHostAreToldApartByPid) {
  std::string a = "127.0.0.1/0000000011/1", b = "127.0.0.1/0000000022/2";
  auto lines = story({formed(0, 0, {a, b}), formed(3, 1, {a})}, {}, 0);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "+3.0 s round 1: 127.0.0.1 (pid 22) left");
}

TEST(MembershipStory, EveryQuarantineOfTheJobIsKept) {
  auto q = [](double until) {
    return nlohmann::json::array(
        {{{"node", "10.0.0.2/0000000022/1"}, {"until", until}, {"reason", "r"}}});
  };
  std::vector<Event> rounds{formed(0, 0, {kA}, {}, q(100)), formed(1, 1, {kA}, {}, q(100)),
                            formed(200, 2, {kA}, {}, q(400))};
  auto all = read_membership(rounds, {}, 0).quarantined;
  ASSERT_EQ(all.size(), 2u) << "quarantined twice";
  EXPECT_EQ(all[0].until, 100);
  EXPECT_EQ(all[1].until, 400);
  EXPECT_EQ(read_membership(rounds, {}, 0).agents, std::vector<std::string>{kA});
}

TEST(MembershipStory, MalformedEventsAreSkipped) {
  std::vector<Event> rounds{
      {0, "rendezvous", -1, -1, 0, "not json"},
      {1, "rendezvous", -1, -1, 0, R"({"members": 3, "quarantined": [1]})"},
      {2, "rendezvous", -1, -1, 0, R"({"round": "x", "quarantined": [{"node": 5}]})"}};
  EXPECT_TRUE(story(rounds, {{0, "restart", -1, -1, 0, R"({"reason": 1})"}}, 0).empty());
  EXPECT_TRUE(read_membership(rounds, {}, 0).quarantined.empty());
}

}  // namespace
}  // namespace ddprun::tracking
