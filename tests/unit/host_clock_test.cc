// The rendezvous host's clock as an HTTP Date says it (etcd): whole seconds, so only
// what is surely off counts.
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

TEST(HostClock, AServerInTheSameSecondIsNotOff) {
  auto offset = http_date_offset([] { return http_date(wall_clock_ms()); });
  ASSERT_TRUE(offset);
  EXPECT_EQ(offset->count(), 0);
}

TEST(HostClock, AServerFarAheadOrBehindIsOffByAtLeastWhatItsSecondAllows) {
  auto ahead = http_date_offset([] { return http_date(wall_clock_ms() + 7'500); });
  ASSERT_TRUE(ahead);
  EXPECT_GE(ahead->count(), 6'400);
  EXPECT_LE(ahead->count(), 7'500);
  auto behind = http_date_offset([] { return http_date(wall_clock_ms() - 7'500); });
  ASSERT_TRUE(behind);
  EXPECT_LE(behind->count(), -6'400);
  EXPECT_GE(behind->count(), -7'500);
}

TEST(HostClock, NoDateOrAFailedRequestTellsNothing) {
  EXPECT_FALSE(http_date_offset([] { return std::string(); }));
  EXPECT_FALSE(http_date_offset([]() -> std::string { throw std::runtime_error("down"); }));
}

}  // namespace
}  // namespace ddprun::rendezvous
