// The rendezvous host's clock as an HTTP Date says it (etcd): whole seconds, so only
// what is surely off counts; as ddprun's store says it: against the round trip's middle.
#include <gtest/gtest.h>

#include <ctime>

#include "rendezvous/host_clock.h"

namespace ddprun::rendezvous {
namespace {

std::string http_date(int64_t ms) {
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char out[64];
  std::strftime(out, sizeof(out), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return out;
}

TEST(HostClock, ReadsAnHttpDate) {
  EXPECT_EQ(parse_http_date("Fri, 27 Nov 2026 20:52:55 GMT"), int64_t{1'795'812'775'000});
  EXPECT_EQ(parse_http_date("Thu, 01 Jan 1970 00:00:01 GMT"), int64_t{1000});
  EXPECT_FALSE(parse_http_date(""));
  EXPECT_FALSE(parse_http_date("yesterday"));
  EXPECT_FALSE(parse_http_date("Fri, 27 Nov 2026 20:52:55 GMT trailing"));
}

// A request made now and answered at once, its reply dated `host_ms`.
std::optional<std::chrono::milliseconds> answered_now(int64_t host_ms) {
  int64_t now = wall_clock_ms();
  return http_date_offset(now, now, http_date(host_ms));
}

TEST(HostClock, AServerInTheSameSecondIsNotOff) {
  auto offset = answered_now(wall_clock_ms());
  ASSERT_TRUE(offset);
  EXPECT_EQ(offset->count(), 0);
}

TEST(HostClock, AServerFarAheadOrBehindIsOffByAtLeastWhatItsSecondAllows) {
  auto ahead = answered_now(wall_clock_ms() + 7'500);
  ASSERT_TRUE(ahead);
  EXPECT_GE(ahead->count(), 6'400);
  EXPECT_LE(ahead->count(), 7'500);
  auto behind = answered_now(wall_clock_ms() - 7'500);
  ASSERT_TRUE(behind);
  EXPECT_LE(behind->count(), -6'400);
  EXPECT_GE(behind->count(), -7'500);
}

TEST(HostClock, NoDateTellsNothing) {
  EXPECT_FALSE(http_date_offset(1000, 1000, ""));
  EXPECT_FALSE(http_date_offset(1000, 1000, "yesterday"));
}

// ddprun's store says its clock (kWallClockKey): the offset is against the middle of
// the round trip. Another server has no such key, or something else there.
TEST(HostClock, AStoresClockKeyIsReadAgainstTheMiddleOfTheRoundTrip) {
  EXPECT_EQ(clock_key_offset(1000, 1200, std::string("1500")), std::chrono::milliseconds(400));
  EXPECT_EQ(clock_key_offset(1000, 1200, std::string("900")), std::chrono::milliseconds(-200));
  EXPECT_FALSE(clock_key_offset(1000, 1200, std::nullopt));
  EXPECT_FALSE(clock_key_offset(1000, 1200, std::string("noon")));
}

}  // namespace
}  // namespace ddprun::rendezvous
