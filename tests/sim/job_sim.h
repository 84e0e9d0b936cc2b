#pragma once

// A deterministic simulation of a whole elastic job, for exploring fault schedules: N
// agents (members, spares, a bad node, agents that share an address), their rendezvous
// state, the liveness they show, their workers, the clock and the faults, all on one
// seeded scheduler. The agents decide with ddprun's own rendezvous rules
// (rendezvous/join/dynamic_state.h: decide_join, next_round, the places freed for dead
// nodes, quarantine) and act as the agent does around them (agent/attempt_end.cc and
// attempt_members.cc: a failure begins the next round or ends the job, a lost member
// ends the round, a late node asks in). Every step is checked against the job's invariants; a
// schedule that breaks one says which, with the seed that replays it exactly.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ddprun::sim {

/// What one schedule came to.
struct Outcome {
  uint64_t seed = 0;
  std::string violation;  // empty: every invariant held
  std::string ended;      // how the job ended ("succeeded", "failed: ...", "running")
  int steps = 0;
  int faults = 0;
  std::vector<std::string> trace;  // with `verbose`: every event, in order
};

/// Runs the schedule of `seed`; `verbose` keeps its trace.
Outcome run_schedule(uint64_t seed, bool verbose = false);

}  // namespace ddprun::sim
