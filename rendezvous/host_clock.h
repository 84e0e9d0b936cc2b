#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "store/store.h"

namespace ddprun::rendezvous {

/// This machine's wall clock, in milliseconds since the epoch.
int64_t wall_clock_ms();

/// How far the wall clock of the host of `store` (ddprun's TCPStore server) is ahead of
/// this node's (negative: behind), by one get of its clock key (kWallClockKey) against
/// the middle of the round trip: within half a round trip. nullopt where the store keeps
/// no clock (another server) or cannot be read.
std::optional<std::chrono::milliseconds> store_clock_offset(store::Store& store);

/// The same from a server that says its time only in an HTTP Date header (etcd), in
/// whole seconds: `ask` makes one request and returns that header ("" if none). The
/// server's time is somewhere in its second, so only what is surely off counts: the
/// offset is the least that fits what was seen (0 where it may be none). nullopt
/// where no date came or it cannot be read.
std::optional<std::chrono::milliseconds> http_date_offset(const std::function<std::string()>& ask);

/// An HTTP date ("Fri, 27 Nov 2026 20:52:55 GMT") in milliseconds since the epoch;
/// nullopt when it is not one.
std::optional<int64_t> parse_http_date(const std::string& date);

}  // namespace ddprun::rendezvous
