#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rendezvous/join/state_store.h"
#include "store/loop_store.h"
#include "store/store.h"

namespace ddprun::rendezvous {

/// The rendezvous state over any Store (TCPStore, MemoryStore): "<prefix>state" is
/// written by compare-and-set; every successful write bumps "<prefix>version" and
/// creates "<prefix>ver/<n>", which waiting nodes block on (a change wakes them at
/// once, nothing polls); changes that concern participants also bump "epoch" and
/// create "epoch/<n>". A node that lost a write announces itself in the next slot of
/// "<prefix>joining/<round>/" (counted by its key "n"; any store can, no listing
/// needed), and a writer takes in the nodes of every slot: nodes arriving together
/// then need a few writes, not one each. (Reading only the latest slots left the
/// earlier ones to write for themselves, one by one: a restart of 512 nodes took 8 s.)
/// A slot stays until the job ends (a node already in is skipped).
///
/// Every write also leaves the state's first line in "<prefix>head", and the number of
/// slots it took in (in order, up to the first not yet filled) in
/// "<prefix>joining/<round>/in": a node joining a forming round announces itself
/// without reading the state, and the first to announce writes for everyone (see
/// DynamicJoiner), so that N nodes read a few bytes each while they wait, not N copies
/// of a state that names all of them.
class GenericStateStore : public StateStore, public StateHeads {
 public:
  /// `store`: the node's connection; its requests and waits are the loop's.
  GenericStateStore(store::LoopStore& store, std::string prefix);

  Task<StateSnapshot> read(CancelSignal& cancel) override;
  Task<bool> write(const StateSnapshot& from, const std::string& to, Wakes wakes,
                   const std::optional<Announcement>& on_loss, CancelSignal& cancel) override;
  Task<void> wake(CancelSignal& cancel) override;
  Task<void> wait(const StateSnapshot& from, bool participant, std::chrono::milliseconds timeout,
                  CancelSignal& cancel) override;
  Task<std::vector<std::pair<std::string, int>>> announced(int round,
                                                           CancelSignal& cancel) override;
  StateHeads* heads() override { return this; }
  std::optional<StateHead> written_head() const override { return written_head_; }
  Task<std::optional<StateHead>> head(int round, std::vector<std::string> with,
                                      CancelSignal& cancel) override;
  Task<void> wait_head(const StateHead& from, std::chrono::milliseconds timeout,
                       CancelSignal& cancel) override;
  Task<Folding> folding(int round, CancelSignal& cancel) override;
  Task<bool> take_over_folding(const Announcement& a, int64_t slot, const std::string& from,
                               CancelSignal& cancel) override;
  Task<int64_t> announce(const Announcement& a, CancelSignal& cancel) override;
  Task<void> wait_announced(int round, std::chrono::milliseconds timeout,
                            CancelSignal& cancel) override;
  /// Slots count the nodes announced: a node behind many waits longer before it looks
  /// again (the store answers them all meanwhile).
  std::chrono::milliseconds longest_wait_in(int64_t slot) const override;
  std::string state_key() const override { return prefix_ + "state"; }
  DynamicState state_in(const std::string& value) const override {
    return DynamicState::decode(value);
  }

 private:
  void remember_written(int64_t version, int64_t epoch, const std::string& state);
  // The remembered write is no longer the state where a later version was seen.
  void forget_written(int64_t seen_version);

  store::LoopStore& store_;
  std::string prefix_;
  // The announcements of one round read so far: slots 1..next_slot_-1, each read once.
  int listed_round_ = -1;
  int64_t next_slot_ = 1;
  std::vector<std::pair<std::string, int>> listed_;
  int64_t said_in_ = 0;                    // the last count of them written to ".../in"
  std::optional<StateSnapshot> written_;   // by the last write that won: the next read()
  std::optional<StateHead> written_head_;  // of that write (kept once read)
  int64_t wake_later_ = 0;                 // the epoch a write moved to, for wake() (0: none)
};

/// "<prefix>joining/<round>/": where nodes announce themselves for `round`.
std::string announce_dir(const std::string& prefix, int round);

/// Announcements listed under announce_dir() as (node, local world size); entries
/// that are not announcements are left out.
std::vector<std::pair<std::string, int>> parse_announcements(
    const std::string& dir, const std::vector<std::pair<std::string, std::string>>& listed);

}  // namespace ddprun::rendezvous
