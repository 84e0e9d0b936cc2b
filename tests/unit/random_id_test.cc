// A run's id is a version 4 UUID, fresh on every call.
#include "common/random_id.h"

#include <regex>
#include <set>
#include <string>

#include <gtest/gtest.h>

namespace ddprun {
namespace {

TEST(RandomUuid, IsAVersion4UuidAndNeverRepeats) {
  const std::regex form("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string id = random_uuid();
    EXPECT_TRUE(std::regex_match(id, form)) << id;
    EXPECT_TRUE(seen.insert(id).second) << "repeated: " << id;
  }
}

}  // namespace
}  // namespace ddprun
