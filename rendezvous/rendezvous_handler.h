#pragma once

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "rendezvous/store.h"

namespace ddprun::rendezvous {

/// What one round of rendezvous decided for this node.
struct RendezvousInfo {
  int round = 0;                       // shared by all nodes
  int restart_count = 0;               // rounds begun after a failure: TORCHELASTIC_RESTART_COUNT
  int group_rank = 0;                  // this node's rank
  int group_world_size = 1;            // nodes in the round
  std::vector<int> local_world_sizes;  // per node, by group rank
  std::vector<std::string> members;    // node ids, by group rank
  std::string master_addr;             // the worker-facing store (hosted by an agent)
  int master_port = 0;
  int64_t completed_at = 0;  // stores with revisions (etcd): the round's keys are newer

  /// First global rank of node `g`: the sum of the lower nodes' local world sizes.
  int rank_offset(int g) const {
    int sum = 0;
    for (int i = 0; i < g; ++i) sum += local_world_sizes[i];
    return sum;
  }
  int world_size() const { return rank_offset(group_world_size); }
};

/// Agrees with the other nodes on ranks and hosts or reaches the store that agents
/// and workers share. Keys of the agents live under kAgentPrefix, which workers'
/// keys (always '/'-prefixed or "init/") never use.
/// Thread-safety: next_rendezvous() and the store from one thread; cancel() from any.
class RendezvousHandler {
 public:
  static constexpr const char* kAgentPrefix = "ddprun/";

  virtual ~RendezvousHandler() = default;

  /// Joins round `round` (elastic: that round or a later one) with this node's worker
  /// count; blocks until every node of the round is there. The workers' keys of earlier rounds are
  /// gone when it returns. Throws TimeoutError naming what is missing, StoreError.
  virtual RendezvousInfo next_rendezvous(int round, int local_world_size) = 0;

  /// The agent-side store (client of the shared store). Valid after construction.
  virtual Store& store() = 0;

  /// Opens a further connection to the shared store, for a thread of its own.
  virtual std::unique_ptr<Store> connect() = 0;
  /// The same, for waiting on keys of the round `info` (which are all newer than the
  /// round): where the store has revisions, its waits need not read first.
  virtual std::unique_ptr<Store> connect_round(const RendezvousInfo& info) {
    (void)info;
    return connect();
  }

  /// Prefix of this round's agent keys, for the agents' own signals: "over" (the
  /// round ends for everyone: "<restart|membership|final>|<exit code>|<reason>") and
  /// "done/<k>" (node k's workers all succeeded).
  virtual std::string round_prefix(int round) const = 0;

  /// Begins the round after `round` (once, whoever calls first): after a failure it
  /// counts as a restart; after a membership change it does not. `alive` are the
  /// members believed alive. No-op for static rendezvous (rounds simply follow).
  virtual void start_next_round(int round, bool failure, const std::set<std::string>& alive) {
    (void)round, (void)failure, (void)alive;
  }

  /// Members of the round whose heartbeats stopped (elastic only).
  virtual std::vector<std::string> dead_members(const RendezvousInfo& info) {
    (void)info;
    return {};
  }

  /// True when this agent hosts the store the agents share (it must outlive the job).
  virtual bool hosts_store() const = 0;

  /// True on the one agent of the job that owns shared duties (the tracking run's
  /// writer): the store's host, or the agent that claimed it where none hosts.
  virtual bool primary() const { return hosts_store(); }

  /// True when the shared state lives outside the agents (etcd) and stays after them.
  virtual bool state_outlives_agents() const { return false; }

  /// How the other agents reach this one ("" when they do not need to).
  virtual std::string address() const { return ""; }

  /// Marks the run finished: agents arriving later fail with RendezvousClosedError
  /// instead of waiting (elastic only; static runs have no shared state to close).
  virtual void close() {}

  /// On the host, at the end: waits (up to `max`) until the other agents have
  /// disconnected, so none loses the store while it is still finishing.
  virtual void linger(std::chrono::milliseconds max) = 0;

  /// True when nodes may come and go (then dead_members() is worth asking).
  virtual bool elastic() const { return false; }
  virtual std::chrono::milliseconds heartbeat_interval() const {
    return std::chrono::milliseconds(5000);
  }

  /// Unblocks a next_rendezvous() in progress (it throws). Thread-safe.
  virtual void cancel() = 0;
};

}  // namespace ddprun::rendezvous
