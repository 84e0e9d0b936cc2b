#include "rendezvous/host_clock.h"

#include <ctime>

#include <charconv>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "store/tcpstore/tcp_store_protocol.h"

namespace ddprun::rendezvous {

using std::chrono::milliseconds;

int64_t wall_clock_ms() {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::optional<milliseconds> clock_key_offset(int64_t sent, int64_t got,
                                             const std::optional<std::string>& answer) {
  int64_t host = 0;
  if (!answer ||
      std::from_chars(answer->data(), answer->data() + answer->size(), host).ec != std::errc{}) {
    return std::nullopt;  // a store that keeps no clock
  }
  return milliseconds(host - (sent + got) / 2);
}

Task<std::optional<milliseconds>> store_clock_offset(store::LoopStore& store,
                                                     CancelSignal& cancel) {
  std::optional<milliseconds> offset;
  try {
    std::vector<std::string> keys(1, store::tcpstore::kWallClockKey);
    int64_t sent = wall_clock_ms();
    auto answer = co_await store.get_now(std::move(keys), cancel);
    offset = clock_key_offset(sent, wall_clock_ms(), answer.at(0));
  } catch (const StoreError& e) {
    spdlog::debug("could not read the rendezvous host's clock: {}", e.what());
  } catch (const TimeoutError& e) {
    spdlog::debug("could not read the rendezvous host's clock: {}", e.what());
  }
  co_return offset;
}

std::optional<int64_t> parse_http_date(const std::string& date) {
  std::tm tm{};
  const char* end = ::strptime(date.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  return static_cast<int64_t>(::timegm(&tm)) * 1000;
}

std::optional<milliseconds> http_date_offset(int64_t sent, int64_t got, const std::string& date) {
  auto host = parse_http_date(date);
  if (!host) {
    spdlog::debug("the rendezvous host's clock: no usable Date header ('{}')", date);
    return std::nullopt;
  }
  // The host read its clock between `sent` and `got`, somewhere in [host, host + 1 s).
  int64_t ahead_at_least = *host - got;            // its second began after our answer
  int64_t behind_at_least = sent - (*host + 999);  // its second ended before our request
  if (ahead_at_least > 0) return milliseconds(ahead_at_least);
  if (behind_at_least > 0) return milliseconds(-behind_at_least);
  return milliseconds(0);
}

}  // namespace ddprun::rendezvous
