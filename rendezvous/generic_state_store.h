#pragma once

#include <string>

#include "store/loop_store.h"
#include "rendezvous/state_store.h"
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
/// A slot stays until the job ends (a node already in is skipped), so withdraw() has
/// nothing to do.
class GenericStateStore : public StateStore {
 public:
  /// `store`: the node's connection; its requests and waits are the loop's.
  GenericStateStore(store::LoopStore& store, std::string prefix);

  Task<StateSnapshot> read(CancelSignal& cancel) override;
  Task<bool> write(const StateSnapshot& from, const std::string& to, bool wakes_participants,
                   const std::optional<Announcement>& on_loss, CancelSignal& cancel) override;
  Task<void> wait(const StateSnapshot& from, bool participant, std::chrono::milliseconds timeout,
                  CancelSignal& cancel) override;
  Task<std::vector<std::pair<std::string, int>>> announced(int round,
                                                            CancelSignal& cancel) override;
  void withdraw(int, const std::string&) override {}
  std::string state_key() const override { return prefix_ + "state"; }
  DynamicState state_in(const std::string& value) const override {
    return DynamicState::decode(value);
  }

 private:
  store::LoopStore& store_;
  std::string prefix_;
};

/// "<prefix>joining/<round>/": where nodes announce themselves for `round`.
std::string announce_dir(const std::string& prefix, int round);

/// Announcements listed under announce_dir() as (node, local world size); entries
/// that are not announcements are left out.
std::vector<std::pair<std::string, int>> parse_announcements(
    const std::string& dir, const std::vector<std::pair<std::string, std::string>>& listed);

}  // namespace ddprun::rendezvous
