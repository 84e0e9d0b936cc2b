#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ddprun::rendezvous {

/// The shared state of an elastic (c10d-style) rendezvous, stored as one compact text
/// value (encode(): a line per node) that changes only when membership or the round
/// changes: heartbeats live in keys of their own, so they never rewrite it.
///
/// A round goes: joining (participants gather; last call once MIN are in) ->
/// complete (ranks fixed, workers run) -> the next round (after a failure, a node
/// that died, or nodes waiting to join). `closed` ends the run for good. Nodes beyond
/// MAX wait as spares for the next round.
/// A node kept out of the rounds: its workers failed too often (--node_failure_limit).
struct Quarantine {
  int64_t until_ms = 0;  // wall clock; it may join again from then on
  int times = 0;         // how often it was quarantined: each cooldown doubles
  std::string reason;
  bool operator==(const Quarantine&) const = default;
};

struct DynamicState {
  int round = 0;
  int restarts = 0;  // rounds started because of a failure: TORCHELASTIC_RESTART_COUNT
  bool complete = false;
  bool closed = false;
  bool failed = false;  // closed because the job failed (spares say so as they leave)
  /// By agent (node id): its workers' failures in all, and its quarantine. Agents that
  /// share an address (one host, or host networking) are each their own node. A
  /// quarantine by address (a host that failed its preflight, which names no agent)
  /// keeps out every agent there. An entry whose cooldown is over stays: the node is
  /// back from quarantine, and its next cooldown doubles.
  std::map<std::string, int> failures;
  std::map<std::string, Quarantine> quarantined;
  /// node id -> its worker count, for the round being formed or run.
  std::map<std::string, int> participants;
  /// Nodes expected back in this round (the last round's members); once all of them
  /// and at least MIN are in, the round completes without waiting for last call.
  std::set<std::string> expected;
  /// Nodes that arrived while the round was complete; they make it start over.
  std::map<std::string, int> waiting;
  /// Hot spares: nodes that arrived while the round was complete and full, or found
  /// the places of the forming round kept for the nodes expected back. They leave the
  /// running round alone and fill the places left in the next one (which a member's
  /// failure or death starts) before it completes: the job is back at full size then.
  std::map<std::string, int> spares;
  /// Wall-clock milliseconds after which the round may complete with fewer than MAX.
  int64_t last_call_deadline_ms = 0;

  std::string encode() const;
  /// From encode(), or the JSON that earlier agents wrote. Throws StoreError on a
  /// malformed value, naming what is wrong.
  static DynamicState decode(const std::string& text);
  bool operator==(const DynamicState&) const = default;
};

struct DynamicConfig {
  int min_nodes = 1;
  int max_nodes = 1;
  int64_t last_call_timeout_ms = 30'000;
  int node_failure_limit = 0;       // failures that quarantine a node (0: never)
  int64_t quarantine_ms = 300'000;  // the first cooldown; each later one doubles
};

/// What a node should do next, given the state it read.
struct Action {
  enum class Kind {
    kWrite,   // compare-and-set `next` over the state that was read
    kWait,    // nothing to do until the state changes (or `wake_at_ms`)
    kDone,    // the round is complete and this node is in it
    kClosed,  // the run is over: fail with a clear message
  };
  Kind kind = Kind::kWait;
  DynamicState next;       // kWrite: what to write; otherwise the state as read
  int64_t wake_at_ms = 0;  // for kWait: when the last call ends (0 = no deadline)
};

/// The rendezvous algorithm as a pure function: one step of `node` (joining with
/// `local_world_size` workers) at wall-clock time `now_ms`. Action::next is the state
/// to write for kWrite, and `state` as it was for every other kind.
Action decide_join(DynamicState state, const std::string& node, int local_world_size,
                   int64_t now_ms, const DynamicConfig& config);

/// The state of the round after `state.round`, started by a member because of a
/// failure (counts as a restart) or a membership change (does not). `lost` are the
/// members no longer believed alive (the others are expected back); waiting nodes are carried over
/// as expected, spares as spares, failure counts and quarantines as they are (a node quarantined at
/// `now_ms` is expected nowhere). The round completes once MAX are in, or every expected node and
/// every spare that fits is, or at the end of the last call.
DynamicState next_round(const DynamicState& state, bool failure, const std::set<std::string>& lost,
                        int64_t now_ms = 0);

/// The nodes the forming round `state` keeps places for (expected back) that are not in
/// it yet, nor quarantined at `now_ms`.
std::vector<std::string> absent_expected(const DynamicState& state, int64_t now_ms);

/// `state` without the places it kept for `gone` (expected nodes whose liveness expired
/// before they came back): a spare takes them, or the round completes without them.
DynamicState without_expected(DynamicState state, const std::vector<std::string>& gone);

/// The address part of a node id "<address>/<pid>/<port>" (the id itself if it is none).
std::string node_address(const std::string& id);

/// The quarantine `node` (an id) is in at `now_ms`, if any: its own, or its address's.
const Quarantine* quarantine_of(const DynamicState& state, const std::string& node, int64_t now_ms);

/// Whether `node` was quarantined before and its cooldown is over: it comes back as a
/// spare, never forcing a running round to start over.
bool back_from_quarantine(const DynamicState& state, const std::string& node, int64_t now_ms);

/// Counts a failure of the workers of `node` (an id); at the config's limit, and each
/// further limit's worth, the node is quarantined (`reason`: the last failure, with the
/// count in all) for a cooldown that doubles each time.
DynamicState note_failure(const DynamicState& state, const std::string& node,
                          const std::string& reason, int64_t now_ms, const DynamicConfig& config);

/// Keeps `key` (a node id, or an address: every agent there) out of the rounds from
/// `now_ms` for the config's cooldown, doubled for each earlier quarantine
/// (note_failure() at its limit, or a host that failed its preflight).
DynamicState quarantine(const DynamicState& state, const std::string& key,
                        const std::string& reason, int64_t now_ms, const DynamicConfig& config);

/// Group ranks: the participants sorted by node id (deterministic for a membership).
std::vector<std::string> ordered_members(const DynamicState& state);

/// `next`, a writer's step over the forming round it read (`read`), with the nodes that
/// announced themselves (`announced`: node, local world size) taken in by their own
/// steps (decide_join() at `now`), all but `self`: nodes arriving together then need a
/// few writes, not one each. A node that would only wait as a spare is left to say so
/// itself. `next` as it is where `read` no longer forms.
DynamicState take_in_announced(const DynamicState& read, DynamicState next, const std::string& self,
                               const std::vector<std::pair<std::string, int>>& announced,
                               int64_t now, const DynamicConfig& config);

}  // namespace ddprun::rendezvous
