#pragma once

#include <string>
#include <vector>

#include "tracking/run_store.h"

namespace ddprun::tracking {

/// A node kept out of the job's rounds (quarantined), as a round that formed saw it.
struct KeptOut {
  std::string node;  // its id, or its address where its host is kept out
  double until = 0;  // wall clock
  std::string reason;
  bool operator==(const KeptOut&) const = default;
};

/// A job's membership as the run recorded it, read in one pass over its "rendezvous"
/// events (each round as it formed) and its "restart" events (why a round ended), both
/// oldest first; `start` is the run's creation, which times are counted from.
struct Membership {
  /// Every node kept out over the job, in the order first seen: one entry per
  /// quarantine (a node quarantined twice is here twice).
  std::vector<KeptOut> quarantined;
  /// Every agent id the rounds named (members and spares), in the order first seen:
  /// what node_name() tells a node's host apart by.
  std::vector<std::string> agents;
  /// One line per round that formed with other members than the last: why the last
  /// one ended, who left, which spare took whose place, who joined, who is kept out and
  /// until when, each node by its host (node_name()), e.g. "+12.3 s round 2: lost
  /// node(s) 10.0.0.2; spare 10.0.0.9 took the place of 10.0.0.2".
  std::vector<std::string> story;
};
Membership read_membership(const std::vector<Event>& rounds, const std::vector<Event>& ends,
                           double start);

}  // namespace ddprun::tracking
