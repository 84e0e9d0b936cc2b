#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>

#include "rendezvous/join/dynamic_state.h"
#include "rendezvous/join/join_notices.h"
#include "rendezvous/join/round_seat.h"
#include "rendezvous/join/state_store.h"
#include "rendezvous/rendezvous_errors.h"
#include "store/loop_store.h"
#include "store/store.h"

namespace ddprun::rendezvous {

/// A completed round as join() returns it to one of its members.
struct JoinedRound {
  int round = 0;
  RoundSeat seat;                     // this node's place in it
  std::optional<DynamicState> state;  // the whole state, where this node read it
  bool from_spare = false;            // this node waited as a spare for its place
};

/// Applies the DynamicState machine to a StateStore through compare-and-set. Waiting
/// nodes wait for the next change (nothing polls); nodes already in the forming
/// round wait only for changes that concern them (it completes, a last call starts, a
/// new round, closing), re-reading at least every longest_wait(). Other keys of a round
/// ("over") go through `store`.
///
/// Where the store keeps a head (StateHead), a node joining a forming round does not
/// read the state, which names every node: it announces itself and waits on the head;
/// the first to announce (the folder) writes in everyone who announced after it, in a
/// few writes, and completes the round, and writes each member's seat (RoundSeat): a
/// node that announced reads only its own seat, unless it asks for the whole state.
/// Anything else (a spare, a quarantine, a folder
/// gone quiet) falls back to each node reading the state and deciding for itself.
/// Not thread-safe (one per store connection): every method is a coroutine on one
/// loop, one at a time (they share the connection); `cancel` ends one with Error. The
/// wall clock is injectable.
class DynamicJoiner {
 public:
  using WallClock = std::function<int64_t()>;  // milliseconds

  DynamicJoiner(store::LoopStore& store, std::unique_ptr<StateStore> state, std::string prefix,
                DynamicConfig config, WallClock wall_ms);
  /// The state in `store` itself (GenericStateStore).
  DynamicJoiner(store::LoopStore& store, const std::string& prefix, DynamicConfig config,
                WallClock wall_ms);

  /// Joins a round numbered `min_round` or later (an agent coming back from round r
  /// must not take r again: it waits until someone starts r+1) — the one being formed,
  /// or asks the running one to start over with us — and returns this node's seat in
  /// the completed round, with the whole state where it was read (always where
  /// `whole_state`; otherwise only where the store keeps no head, or something went
  /// other than the usual way).
  /// A coroutine on the loop: its waits are the loop's completions, its reads and
  /// writes one request each. A node that finds the round complete and full waits as
  /// a spare for the next round, however long the job runs: the timeout counts only
  /// the time spent waiting for a round to form. Throws RendezvousClosedError,
  /// SpareNotNeeded (the run closed while this node was a spare), TimeoutError (saying
  /// how many nodes joined and how many are needed), Error once `cancel` is cancelled.
  Task<JoinedRound> join(std::string node, int local_world_size, int min_round,
                         std::chrono::milliseconds timeout, CancelSignal& cancel,
                         bool whole_state = false);

  /// Which of the given nodes are gone (their liveness expired), judged on the loop.
  using DeadAmong =
      std::function<Task<std::vector<std::string>>(std::vector<std::string>, CancelSignal&)>;
  /// While this node is in a forming round (or a spare for it) that keeps places for nodes expected
  /// back (the last round's members), it asks `dead_among` about those not in yet every `every`,
  /// and frees the places of the dead: a spare takes them, or the round completes without them.
  /// Without it (the default) such a round waits for them until its last call or the join timeout:
  /// a node whose workers failed together with a dead node's began the round expecting it back.
  void watch_absent(DeadAmong dead_among, std::chrono::milliseconds every) {
    dead_among_ = std::move(dead_among);
    absent_every_ = every;
  }

  /// Stores with revisions (etcd): when the round join() returned completed; every
  /// key of that round is newer. 0 elsewhere.
  int64_t completed_at() const { return epoch_revision_; }

  /// Begins the round after `round` unless someone already did (see next_round()).
  Task<void> start_next_round(int round, bool failure, std::set<std::string> lost,
                              CancelSignal& cancel);

  /// Where the round this node began last (start_next_round()) is, as text for the
  /// end of the round before it to carry (RoundEnd::next_round): its head as written.
  /// Empty where another node began it.
  std::string next_round_hint() const { return began_; }
  /// Another node's hint (next_round_hint()): the next join() arrives with that head
  /// instead of reading it (one request less for every node of a restart); a stale
  /// one costs a wait that returns at once. Text that is not a hint is ignored.
  void told_next_round(std::string hint) { told_ = std::move(hint); }

  /// The key that holds the state, and the nodes waiting as spares in what it holds
  /// (for a read among a running round's requests). Throws Error where it holds no
  /// state.
  std::string state_key() const { return state_->state_key(); }
  std::vector<std::string> spares_in(const std::string& value) const;

  /// Counts a failure of the workers of `node` (an id; see note_failure() of
  /// dynamic_state.h): at the limit, it is quarantined. Returns the quarantine it is
  /// in then, if any.
  Task<std::optional<Quarantine>> note_failure(std::string node, std::string reason,
                                               CancelSignal& cancel);

  /// Quarantines every agent at `address` now (its host failed its preflight): see quarantine()
  /// of dynamic_state.h.
  Task<void> keep_out(std::string address, std::string reason, CancelSignal& cancel);

  /// Marks the run closed (idempotent); `failed`: because the job failed.
  Task<void> close(bool failed, CancelSignal& cancel);

  /// Whether this node waits as a spare now (during join()), for the agent's console.
  bool spare() const { return notices_.spare(); }

  /// Keys of round `round` live under this prefix.
  std::string round_prefix(int round) const;

 private:
  Task<std::optional<RoundSeat>> arrive(std::string node, int local_world_size, int min_round,
                                        std::chrono::steady_clock::time_point deadline,
                                        CancelSignal& cancel);
  Task<std::optional<RoundSeat>> announce_and_wait(StateHead head, std::string node,
                                                   int local_world_size,
                                                   std::chrono::steady_clock::time_point deadline,
                                                   CancelSignal& cancel);
  Task<std::optional<RoundSeat>> take_seat(int round, std::string node,
                                           std::vector<std::optional<std::string>> got,
                                           CancelSignal& cancel);
  Task<void> write_seats(const DynamicState& complete, CancelSignal& cancel);
  Task<bool> write(const StateSnapshot& from, const DynamicState& to, CancelSignal& cancel,
                   const std::optional<Announcement>& on_loss = std::nullopt);
  Task<std::optional<StateSnapshot>> back_off(std::string node, bool announced,
                                              CancelSignal& cancel);
  Task<std::optional<StateSnapshot>> write_turn(const StateSnapshot& snap,
                                                const DynamicState& decided,
                                                const std::string& node, int local_world_size,
                                                CancelSignal& cancel);
  using Announced = std::vector<std::pair<std::string, int>>;
  /// `completed_at`: when its round completed, where known (completed_at()).
  void seated(int64_t completed_at);
  Task<bool> free_places_of_dead(const StateSnapshot& snap, CancelSignal& cancel);
  // join()'s steps (dynamic_joiner.cc; the coroutines in dynamic_joiner_steps.cc).
  Action decide(const DynamicState& state, const std::string& node, int local_world_size,
                int min_round) const;
  std::chrono::milliseconds wait_slice(const Action& a,
                                       std::chrono::steady_clock::duration left) const;
  JoinedRound seat_from(StateSnapshot snap, const std::string& node);
  JoinedRound announced_seat(RoundSeat seat, const std::string& node);
  Task<void> end_round_to_join(int round, std::string node, CancelSignal& cancel);

  store::LoopStore& store_;
  std::unique_ptr<StateStore> state_;
  std::string prefix_;
  DynamicConfig config_;
  WallClock wall_ms_;
  JoinNotices notices_;                      // what the console says while joining; whether a spare
  int lost_writes_ = 0;                      // compare-and-sets lost in a row
  std::chrono::microseconds write_time_{0};  // how long the last one took
  int announced_round_ = -1;                 // the round this node announced itself for
  int64_t epoch_revision_ = 0;               // see completed_at()
  int64_t seat_completed_at_ = 0;            // of the round whose seat announce_and_wait() read
  // What one join() learns as it goes, reset as it begins.
  struct JoinState {
    bool whole_state = false;      // it reads the whole state, not a seat
    bool folder = false;           // the first to announce itself: writes for the others
    bool waited_as_spare = false;  // at some point
  } join_;
  std::string began_;  // see next_round_hint()
  std::string told_;   // see told_next_round(): taken by the next join
  std::minstd_rand jitter_{std::random_device{}()};
  DeadAmong dead_among_;                                    // see watch_absent()
  std::chrono::milliseconds absent_every_{1000};            // see watch_absent()
  std::chrono::steady_clock::time_point absent_checked_{};  // the last ask
};

}  // namespace ddprun::rendezvous
