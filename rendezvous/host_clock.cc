#include "rendezvous/host_clock.h"

#include <ctime>

#include <charconv>

#include <spdlog/spdlog.h>

#include "store/tcpstore/tcp_store_protocol.h"

namespace ddprun::rendezvous {

using std::chrono::milliseconds;

int64_t wall_clock_ms() {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::optional<milliseconds> store_clock_offset(store::Store& store) {
  try {
    int64_t sent = wall_clock_ms();
    auto answer = store.get_now(store::tcpstore::kWallClockKey);
    int64_t got = wall_clock_ms();
    int64_t host = 0;
    if (!answer || std::from_chars(answer->data(), answer->data() + answer->size(), host).ec !=
                       std::errc{}) {
      return std::nullopt;  // a store that keeps no clock
    }
    return milliseconds(host - (sent + got) / 2);
  } catch (const std::exception& e) {
    spdlog::debug("could not read the rendezvous host's clock: {}", e.what());
    return std::nullopt;
  }
}

std::optional<int64_t> parse_http_date(const std::string& date) {
  std::tm tm{};
  const char* end = ::strptime(date.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  return static_cast<int64_t>(::timegm(&tm)) * 1000;
}

std::optional<milliseconds> http_date_offset(const std::function<std::string()>& ask) {
  try {
    int64_t sent = wall_clock_ms();
    std::string date = ask();
    int64_t got = wall_clock_ms();
    auto host = parse_http_date(date);
    if (!host) {
      spdlog::debug("the rendezvous host's clock: no usable Date header ('{}')", date);
      return std::nullopt;
    }
    // The host read its clock between `sent` and `got`, somewhere in [host, host + 1 s).
    int64_t ahead_at_least = *host - got;        // its second began after our answer
    int64_t behind_at_least = sent - (*host + 999);  // its second ended before our request
    if (ahead_at_least > 0) return milliseconds(ahead_at_least);
    if (behind_at_least > 0) return milliseconds(-behind_at_least);
    return milliseconds(0);
  } catch (const std::exception& e) {
    spdlog::debug("could not read the rendezvous host's clock: {}", e.what());
    return std::nullopt;
  }
}

}  // namespace ddprun::rendezvous
