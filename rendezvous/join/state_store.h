#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/cancel_signal.h"
#include "common/coro.h"
#include "common/error.h"
#include "rendezvous/join/dynamic_state.h"

namespace ddprun::rendezvous {

/// The rendezvous state as read at one moment.
struct StateSnapshot {
  int64_t version = 0;  // every change
  int64_t epoch = 0;    // changes that concern nodes already in the forming round
  std::string raw;      // the state as stored (empty: none yet)
  DynamicState state;
  int64_t revision = 0;        // stores with revisions (etcd): when this was read,
  int64_t state_revision = 0;  // when the state was last written (0: never)
  int64_t epoch_revision = 0;  // and when the epoch last moved: a round complete in
                               // this state completed then, and its keys are newer
};

/// A node that wants into `round` with `local_world_size` workers, for any writer of
/// the forming round to take in (nodes arriving together then need a few writes, not
/// one each).
struct Announcement {
  int round = 0;
  std::string node;
  int local_world_size = 0;
};

/// The first line of the state as last written (its round and whether that round is
/// complete or the run closed), the counters of its changes, and how many of a
/// round's announcements writers have taken in: a few bytes, where the whole state
/// grows with the nodes. A node that has not joined reads this, not the state, to
/// know where to announce itself and when to look again. A hint only: writers that
/// race may leave an older line for a moment, so a node that finds no progress for a
/// whole wait reads the state itself.
struct StateHead {
  bool exists = false;  // false: nothing written yet (the first round forms)
  int round = 0;
  bool complete = false;
  bool closed = false;
  int64_t last_call_deadline_ms = 0;
  int64_t version = 0;
  int64_t epoch = 0;
  int64_t taken_in = 0;  // announcements of the round asked for up to this are handled
  int64_t revision = 0;  // stores with revisions (etcd): when this was read
  // Stores with revisions: when the epoch last moved, as of `revision`. A head that
  // says its round is complete and the run open: when that round completed (only a
  // write that moves the round on, or closes the run, moves the epoch after that).
  int64_t epoch_revision = 0;
  // The values of the keys head() was asked to read with it, in their order (nullopt:
  // not there): a node woken as its round formed reads its seat in the same request.
  std::vector<std::optional<std::string>> with;
  bool forming() const { return !complete && !closed; }
};

/// The head of the state `snap` holds.
inline StateHead head_in(const StateSnapshot& snap) {
  StateHead h;
  h.exists = snap.version > 0;
  h.round = snap.state.round;
  h.complete = snap.state.complete;
  h.closed = snap.state.closed;
  h.last_call_deadline_ms = snap.state.last_call_deadline_ms;
  h.version = snap.version;
  h.epoch = snap.epoch;
  h.revision = snap.revision;
  return h;
}

/// A head as text a round's end can carry (RoundEnd::next_round):
/// "<round>.<version>.<epoch>.<revision>.<last call deadline>"; "" for none.
std::string hint_of(const std::optional<StateHead>& head);
/// The head a hint (hint_of()) says; nullopt where the text is not one.
std::optional<StateHead> head_from_hint(const std::string& hint);

/// What a state store that keeps a head offers (GenericStateStore always, etcd's by
/// default): the state's first line, nodes that announce themselves without writing
/// the state, and the folder that writes them in (see DynamicJoiner). Apart from
/// StateStore, so that a store without one has nothing to refuse.
class StateHeads {
 public:
  virtual ~StateHeads() = default;

  /// The head of this store's last write that won, as a head() read right after it
  /// would give it (nullopt: none).
  virtual std::optional<StateHead> written_head() const = 0;
  /// The head of the state, with how many announcements of `round` writers took in
  /// (none read where `round` < 0), and the values of the keys `with` (full keys, read
  /// in the same request). nullopt where the state was written without one: each
  /// joining node then reads the whole state.
  virtual Task<std::optional<StateHead>> head(int round, std::vector<std::string> with,
                                              CancelSignal& cancel) = 0;
  /// Returns after the head moves on from `from` (a write), or after `timeout`.
  virtual Task<void> wait_head(const StateHead& from, std::chrono::milliseconds timeout,
                               CancelSignal& cancel) = 0;
  /// Announces `a.node` for `a.round` without writing the state; returns its place
  /// among the round's announcements (1: the first, which writes for the others; the
  /// numbers of the others only grow, and are what StateHead::taken_in counts).
  virtual Task<int64_t> announce(const Announcement& a, CancelSignal& cancel) = 0;
  /// Who writes in `round`'s announcements now (the folder's part), as a token for
  /// take_over_folding().
  struct Folding {
    std::string token;
  };
  virtual Task<Folding> folding(int round, CancelSignal& cancel) = 0;
  /// Claims the folder's part of `a.round` for the node announced in slot `slot`,
  /// where whoever had it is still `from` (a folding() token): true where it is this
  /// node's now.
  virtual Task<bool> take_over_folding(const Announcement& a, int64_t slot, const std::string& from,
                                       CancelSignal& cancel) = 0;
  /// Returns once a node announces itself for `round` after those announced() listed
  /// last, or after `timeout`.
  virtual Task<void> wait_announced(int round, std::chrono::milliseconds timeout,
                                    CancelSignal& cancel) = 0;
};

/// What the DynamicJoiner needs from the place its state lives: a consistent read, a
/// compare-and-set, a wait for the next change and announcements. Over a plain Store
/// each is a few requests (GenericStateStore); etcd does each in one. Each is a
/// coroutine on the loop, its requests awaited there (etcd's as its client's loop calls); `cancel`
/// ends one with Error.
class StateStore {
 public:
  virtual ~StateStore() = default;

  virtual Task<StateSnapshot> read(CancelSignal& cancel) = 0;
  /// Whom a write wakes: nobody (one more node joining concerns only the nodes still to
  /// act), or the nodes already in the forming round (the epoch moves): at once, or
  /// once wake() is called (a write that completes a round whose seats come first:
  /// woken with it, every member would ask for its seat while the seats are written).
  enum class Wakes { kNobody, kParticipants, kParticipantsLater };
  /// Replaces the state read in `from` by `to` unless another node wrote first (then
  /// false, and `on_loss`, if given, is announced).
  virtual Task<bool> write(const StateSnapshot& from, const std::string& to, Wakes wakes,
                           const std::optional<Announcement>& on_loss, CancelSignal& cancel) = 0;
  /// Wakes the participants of the last write that won with kParticipantsLater (none
  /// since: nothing).
  virtual Task<void> wake(CancelSignal& cancel) = 0;
  /// Returns after the next change since `from` (a participant: the next that
  /// concerns participants) or after `timeout`, whichever is first: a coroutine on the
  /// loop, whose wait is the loop's completion. Throws Error once `cancel` is cancelled.
  virtual Task<void> wait(const StateSnapshot& from, bool participant,
                          std::chrono::milliseconds timeout, CancelSignal& cancel) = 0;
  /// The nodes announced for `round` as (node, local world size): numbered slots over
  /// any Store, a listed prefix on etcd.
  virtual Task<std::vector<std::pair<std::string, int>>> announced(int round,
                                                                   CancelSignal& cancel) = 0;
  /// The store's head (StateHeads), where it keeps one; null where it does not: each
  /// joining node then reads the whole state.
  virtual StateHeads* heads() { return nullptr; }
  /// The key that holds the state, for a read among other requests (a running round's),
  /// and the state in what it holds (throws Error where it holds none).
  virtual std::string state_key() const = 0;
  virtual DynamicState state_in(const std::string& value) const = 0;
  /// The longest wait before a node reads the state again anyway: a safety net
  /// where a wake-up could be missed (deadlines of the state wake nodes by themselves).
  virtual std::chrono::milliseconds longest_wait() const { return std::chrono::seconds(1); }
  /// The same for a node announced in `slot` (announce()) that waits for its round.
  virtual std::chrono::milliseconds longest_wait_in(int64_t slot) const {
    (void)slot;
    return longest_wait();
  }
};

}  // namespace ddprun::rendezvous
