#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "rendezvous/join/dynamic_state.h"

namespace ddprun::rendezvous {

/// What one member of a completed round needs of it: a few numbers and the few members
/// it deals with, where the round's state names every node. The node whose write
/// completes a round writes each member's seat under the round's keys (seats_of()), so
/// that every other member reads its own seat, not the whole state: a round of N nodes
/// then costs the store N small reads instead of N reads of a value that grows with N.
struct RoundSeat {
  int restarts = 0;  // rounds begun after a failure: TORCHELASTIC_RESTART_COUNT
  int group_rank = 0;
  int group_world_size = 0;  // members of the round
  int first_rank = 0;        // this member's first global rank
  int world_size = 0;        // the workers of every member
  std::string host;          // group rank 0's id: it hosts the workers' store
  /// The members this one checks each heartbeat interval (watched_members()), by group
  /// rank: every other member for group rank 0.
  std::vector<std::pair<int, std::string>> watched;
  std::vector<std::string> spares;                // hot spares as the round formed
  std::map<std::string, Quarantine> quarantined;  // by address, as the round formed

  /// JSON; decode() throws StoreError naming what is wrong.
  std::string encode() const;
  static RoundSeat decode(const std::string& text);
  bool operator==(const RoundSeat&) const = default;
};

/// The keys of `node`'s seat in a round (under `round_prefix`), then of `seated`, the
/// key written after every seat.
std::vector<std::string> seat_keys(const std::string& round_prefix, const std::string& node);

/// The seat of the member at `group_rank` of the complete `state` (`members`: its
/// participants by group rank, ordered_members()).
RoundSeat seat_in(const DynamicState& state, const std::vector<std::string>& members,
                  int group_rank);

/// Every member's seat in the complete `state`, encoded, by node id (group rank order).
std::vector<std::pair<std::string, std::string>> seats_of(const DynamicState& state);

}  // namespace ddprun::rendezvous
