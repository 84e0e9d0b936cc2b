#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "common/cancel_signal.h"
#include "common/coro.h"
#include "store/loop_store.h"

namespace ddprun::rendezvous {

/// This machine's wall clock, in milliseconds since the epoch.
int64_t wall_clock_ms();

/// How far the wall clock of the host of `store` (ddprun's TCPStore server) is ahead of
/// this node's (negative: behind), by one get of its clock key (kWallClockKey) against
/// the middle of the round trip: within half a round trip. nullopt where the store keeps
/// no clock (another server) or cannot be read. From a coroutine on the loop.
Task<std::optional<std::chrono::milliseconds>> store_clock_offset(store::LoopStore& store,
                                                                  CancelSignal& cancel);
/// The arithmetic of it: the clock key's value `answer` (nullopt: not there), asked at
/// `sent` and answered at `got` (this node's wall clock, ms).
std::optional<std::chrono::milliseconds> clock_key_offset(int64_t sent, int64_t got,
                                                          const std::optional<std::string>& answer);

/// The same from a server that says its time only in an HTTP Date header (etcd), in
/// whole seconds: `date`, that header ("" if none) of a reply to a request made at
/// `sent` and answered at `got`. The server's time is somewhere in its second, so only
/// what is surely off counts: the offset is the least that fits what was seen (0 where
/// it may be none). nullopt where no date came or it cannot be read.
std::optional<std::chrono::milliseconds> http_date_offset(int64_t sent, int64_t got,
                                                          const std::string& date);

/// An HTTP date ("Fri, 27 Nov 2026 20:52:55 GMT") in milliseconds since the epoch;
/// nullopt when it is not one.
std::optional<int64_t> parse_http_date(const std::string& date);

}  // namespace ddprun::rendezvous
