#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "rendezvous/join/dynamic_state.h"

namespace ddprun::rendezvous {

/// What a joining node says on its console, each thing once as it changes (other nodes
/// kept out, this node quarantined or waiting as a spare), and why a join ends without
/// a place (the run closed, the join timed out), as what it throws. Owns whether this
/// node waits as a spare. Not thread-safe: its joiner's loop.
class JoinNotices {
 public:
  JoinNotices(DynamicConfig config, std::function<int64_t()> wall_ms)
      : config_(config), wall_ms_(std::move(wall_ms)) {}

  /// Other nodes kept out (quarantined) while `self` joins, each said once with why:
  /// a node that failed its preflight before it ever joined is named here first.
  void kept_out(const std::map<std::string, Quarantine>& quarantined, const std::string& self);
  /// Says why `node` waits after `a`, where that changed: kept out (its quarantine), or
  /// a spare (`spare`), which it is from now on. Returns whether it is kept out on
  /// purpose (the join's deadline starts again then).
  bool waiting(const DynamicState& state, const std::string& node, bool spare, const Action& a);
  /// The job ended before `node` got a place: SpareNotNeeded for a spare, otherwise
  /// RendezvousClosedError saying why (its quarantine, if it was in one).
  [[noreturn]] void closed(const DynamicState& state, const std::string& node, bool spare);
  /// The join's deadline passed: TimeoutError saying how many joined, what was needed,
  /// who is kept out.
  [[noreturn]] void timed_out(const DynamicState& state) const;

  /// Whether this node waits as a spare now.
  bool spare() const { return spare_; }
  /// It has its place (or none will come): no longer a spare.
  void seated() { spare_ = false; }

 private:
  DynamicConfig config_;
  std::function<int64_t()> wall_ms_;
  std::map<std::string, int64_t> said_out_;  // nodes said kept out: id or address, until
  int64_t quarantined_until_ = 0;            // this node's quarantine, as last said
  bool spare_ = false;
};

}  // namespace ddprun::rendezvous
