#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "common/cancel_signal.h"
#include "common/clock.h"
#include "common/coro.h"
#include "rendezvous/rendezvous_errors.h"
#include "rendezvous/round/round_coordinator.h"
#include "store/loop_store.h"

namespace ddprun::rendezvous {

/// What one round of rendezvous decided for this node.
struct RendezvousInfo {
  int round = 0;                       // shared by all nodes
  int restart_count = 0;               // rounds begun after a failure: TORCHELASTIC_RESTART_COUNT
  int group_rank = 0;                  // this node's rank
  int group_world_size = 1;            // nodes in the round
  int first_rank = 0;                  // this node's first global rank
  int world_size = 1;                  // the workers of every node
  /// Node ids by group rank: in static rounds none; in elastic ones where this node
  /// read them (group rank 0, the primary, with --preflight's link check), otherwise
  /// none (a round names every node: each reads only its own seat, RoundSeat).
  std::vector<std::string> members;
  std::vector<std::string> spares;     // nodes waiting as hot spares as the round formed
  struct Quarantined {
    std::string node;  // its address
    int64_t until_ms = 0;
    std::string reason;
  };
  std::vector<Quarantined> quarantined;  // nodes kept out as the round formed
  std::string master_addr;             // the worker-facing store (hosted by an agent)
  int master_port = 0;
  int64_t completed_at = 0;  // stores with revisions (etcd): the round's keys are newer
  bool from_spare = false;   // this node waited as a hot spare for its place in this round

  /// first_rank and world_size from every node's worker count, by group rank.
  void count_ranks(const std::vector<int>& local_world_sizes) {
    first_rank = 0;
    world_size = 0;
    for (size_t i = 0; i < local_world_sizes.size(); ++i) {
      if (static_cast<int>(i) < group_rank) first_rank += local_world_sizes[i];
      world_size += local_world_sizes[i];
    }
  }
};

/// A store an agent serves, as its metrics show it.
struct ServedStore {
  std::string role;  // "workers" (the workers' store), "rendezvous" (the agents' state)
  size_t connections = 0;
  std::vector<std::pair<std::string, uint64_t>> requests;  // by operation
};

/// Agrees with the other nodes on ranks and hosts or reaches the store that agents
/// and workers share; hands the agent each round's protocol (RoundCoordinator).
/// Keys of the agents live under kAgentPrefix, which workers' keys (always
/// '/'-prefixed or "init/") never use.
/// Made by open_rendezvous() (rendezvous_factory.h), which reaches its store first.
/// Thread-safety: the agent's loop thread only.
class RendezvousHandler {
 public:
  static constexpr const char* kAgentPrefix = "ddprun/";

  virtual ~RendezvousHandler() = default;

  /// Joins round `round` (elastic: that round or a later one) with this node's worker
  /// count, until every node of the round is there: a coroutine on the agent's loop,
  /// whose every wait for the other nodes is a completion of the loop (what it asks the
  /// store between them is one request each). The workers' keys of earlier rounds are
  /// gone when it returns. Throws TimeoutError naming what is missing, StoreError,
  /// RendezvousClosedError, SpareNotNeeded (this node waited as a spare and the job
  /// ended), or Error once cancel() was called.
  virtual Task<RendezvousInfo> next_rendezvous(int round, int local_world_size) = 0;

  /// The agent-side store (client of the shared store) for the agent's own keys beside
  /// the rounds' (where the run's primary listens), from its loop. Valid after
  /// construction; requests made through it are the only ones on it meanwhile.
  virtual store::LoopStore& loop_store() = 0;

  /// The protocol among the nodes of round `info` (as next_rendezvous() returned it),
  /// driven from the agent's loop `io` with timers from `clock`. The handler outlives it.
  virtual std::unique_ptr<RoundCoordinator> coordinate(const RendezvousInfo& info,
                                                       boost::asio::io_context& io,
                                                       Clock& clock) = 0;

  /// True on the one agent of the job that owns shared duties (the tracking run's
  /// writer): the store's host, or the agent that claimed it where none hosts.
  virtual bool primary() const = 0;

  /// This node's id in the rounds ("" where nodes have none: static rendezvous).
  virtual std::string node_id() const { return ""; }

  /// How the other agents reach this one ("" when they do not need to).
  virtual std::string address() const { return ""; }

  /// The job succeeded on this node. Where this agent should, marks the run finished
  /// (agents arriving later fail with RendezvousClosedError instead of waiting) and,
  /// where it hosts the agents' store, keeps it up until the others have left (at most
  /// a few seconds). Errors are logged, never thrown. A coroutine on the loop: `cancel`
  /// ends it (a stop signal's last words ran out of time).
  virtual Task<void> finish_job(CancelSignal& /*cancel*/) { co_return; }

  /// The job ended without success on this node (its restarts spent, stopped by a
  /// signal, too few nodes left). Where this agent can, marks the run ended as failed,
  /// so that spares waiting for a place leave (they get SpareNotNeeded). A hosted
  /// store stays up as in finish_job(), for the others to read how the job ended.
  /// Errors are logged; awaited as finish_job() is.
  virtual Task<void> job_failed(CancelSignal& /*cancel*/) { co_return; }

  /// How far the rendezvous host's wall clock is ahead of this node's (negative:
  /// behind), by one request: the middle of its round trip against the host's answer,
  /// so within half a round trip. nullopt where no host answers with its clock or it
  /// cannot be read. Awaited on the loop; `cancel` ends it.
  virtual Task<std::optional<std::chrono::milliseconds>> clock_offset(CancelSignal& cancel) {
    (void)cancel;
    co_return std::nullopt;
  }

  /// This node failed its preflight before a later round and leaves: where nodes can be
  /// kept out (elastic jobs), it is quarantined with `reason` for --quarantine_cooldown,
  /// so that the others neither wait for it nor take it back meanwhile, and the run
  /// says why it is out. Errors are logged; awaited as finish_job() is.
  virtual Task<void> keep_out(std::string /*reason*/, CancelSignal& /*cancel*/) { co_return; }

  /// This node leaves the job, whichever way it ended here: its proof of life goes now
  /// rather than when it runs out (etcd: its lease is revoked). The last request of the
  /// handler; errors are logged. A coroutine on the loop: `cancel` ends it.
  virtual Task<void> leave(CancelSignal& /*cancel*/) { co_return; }

  /// Whether this node waits as a hot spare now (in next_rendezvous()), for its metrics.
  virtual bool waiting_as_spare() const { return false; }

  /// The stores this agent serves now (none where it serves none), for its metrics.
  virtual std::vector<ServedStore> served_stores() const { return {}; }

  /// Ends a next_rendezvous() in progress at once, and any later one (it throws Error):
  /// its wait is cancelled on the loop, nothing is interrupted from outside.
  virtual void cancel() = 0;
};

}  // namespace ddprun::rendezvous
