#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "store/key_value_table.h"

namespace ddprun::rendezvous {

/// An elastic rendezvous writes keys under its run's prefix that only a round or a
/// state change needs: each round's protocol keys ("round/<r>/...", announcements under
/// "joining/<r>/") and a wake-up key per state change ("ver/<n>", "epoch/<n>"). Kept
/// forever they grow the store with every restart; once round `round` has formed, those
/// of rounds before the last one and wake-up keys more than kWakeKeysKept changes old
/// are history. (A node that far behind finds its wake-up key gone: its wait times out
/// and it reads the state again.)
inline constexpr int64_t kWakeKeysKept = 16;

/// Whether `key` (a full key) is such history, given the state's current `version` and
/// `epoch` counters.
bool is_history(const std::string& key, const std::string& prefix, int round, int64_t version,
                int64_t epoch);

/// Erases the history under `prefix` from `table` (the c10d host's own keys, where the
/// counters are too); returns how many keys went.
size_t forget_history(store::KeyValueTable& table, const std::string& prefix, int round);

}  // namespace ddprun::rendezvous
