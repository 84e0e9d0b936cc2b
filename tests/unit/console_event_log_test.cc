// The agent's events as JSON lines on the console (--event_log_handler=console).
#include "tracking/console_event_log.h"

#include <gtest/gtest.h>

#include <sstream>

#include <nlohmann/json.hpp>

namespace ddprun::tracking {
namespace {

nlohmann::json rendezvous_event(const FormedRound& formed) {
  std::ostringstream out;
  ConsoleEventLog log(nullptr, out, "h");
  log.rendezvous_complete(formed);
  return nlohmann::json::parse(out.str());
}

// A node that read only its own seat of a large round names no members, rather than
// an empty list that would say the round had none.
TEST(ConsoleEventLog, TheRendezvousEventNamesTheMembersOnlyWhereThisNodeKnowsThem) {
  FormedRound formed{3, 1, 16, {"a/1/2", "b/1/2"}, {}, {}, ""};
  std::string known = rendezvous_event(formed).dump();
  EXPECT_NE(known.find(R"("members":["a/1/2","b/1/2"])"), std::string::npos) << known;
  formed.members.clear();
  std::string seat_only = rendezvous_event(formed).dump();
  EXPECT_EQ(seat_only.find("members"), std::string::npos) << seat_only;
  EXPECT_NE(seat_only.find(R"("world_size")"), std::string::npos) << seat_only;
}

}  // namespace
}  // namespace ddprun::tracking
