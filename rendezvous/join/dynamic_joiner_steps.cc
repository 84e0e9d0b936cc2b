// The joiner's steps: a node's arrival, a write of the join, and the quick steps while
// a job runs and as it ends (each a few reads and compare-and-sets of the state,
// retried where another node wrote first). Apart from join() on purpose: GCC 12
// (docs/contributing.md) inlines a coroutine's frame allocation into a caller in the same unit but
// not always its deallocation, and then takes them for a mismatched new and delete
// (-Wmismatched-new-delete).
#include "rendezvous/join/dynamic_joiner.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <utility>

#include <spdlog/spdlog.h>

#include "common/loop_waits.h"
#include "common/node_names.h"
#include "rendezvous/round/round_end.h"

namespace ddprun::rendezvous {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How long an announced node lets the state stay still before it writes itself (at
// least, at most), and how many others' writes it waits through.
constexpr auto kAnnouncedWaitMin = std::chrono::microseconds(10'000);
constexpr auto kAnnouncedWaitMax = std::chrono::microseconds(200'000);
constexpr int kAnnouncedMaxChanges = 32;

// Changes a node already in the forming round must hear of; others (one more node
// joining) concern only nodes that still have to act.
static bool concerns_participants(const DynamicState& from, const DynamicState& to) {
  return from.complete != to.complete || from.round != to.round || from.closed != to.closed ||
         from.last_call_deadline_ms != to.last_call_deadline_ms;
}

// Where the store keeps a head, a node joining a forming round reads the head, not the
// state, to know where to announce itself (see announce_and_wait()); a node coming back
// from a round waits on it for the next round to start. Returns this node's seat in
// the round it announced itself for, or nothing, for join()'s loop to read the state
// and decide.
Task<std::optional<RoundSeat>> DynamicJoiner::arrive(std::string node, int local_world_size,
                                                     int min_round, Clock::time_point deadline,
                                                     CancelSignal& cancel) {
  std::optional<RoundSeat> seat;
  std::optional<StateHead> head = head_from_hint(std::exchange(told_, ""));
  StateHeads* heads = state_->heads();
  if (!heads) co_return seat;
  std::vector<std::string> nothing_more;
  if (!head || head->round < min_round) head = co_await heads->head(-1, nothing_more, cancel);
  while (head && head->exists && head->round < min_round && !head->closed) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) co_return seat;
    co_await heads->wait_head(*head, std::clamp(left, milliseconds(1), state_->longest_wait()),
                              cancel);
    head = co_await heads->head(-1, nothing_more, cancel);
  }
  if (!head || !head->forming() || head->round < min_round) co_return seat;
  seat = co_await announce_and_wait(*head, node, local_world_size, deadline, cancel);
  co_return seat;
}

// The node announces itself for the forming round `head` names. The first to announce
// (the folder) returns at once, to write itself and everyone announced after it in.
// The others wait, reading the head only. Once the round formed, each returns its seat
// (take_seat()). Otherwise, or where the node asked for the whole state, it returns
// nothing, for join()'s loop to read the state: the round formed, moved on or the run
// closed; nothing was written for two whole waits while this node was not yet taken
// in, and it took the folder's part over (the folder may be slow or gone: one waiting
// node a time takes its place); nothing was written for a whole wait after a write
// handled this node, with no last call running (it may have been left out); the last call
// ended a wait ago with the round still forming; or the deadline passed.
Task<std::optional<RoundSeat>> DynamicJoiner::announce_and_wait(StateHead head, std::string node,
                                                                int local_world_size,
                                                                Clock::time_point deadline,
                                                                CancelSignal& cancel) {
  const int round = head.round;
  StateHeads& heads = *state_->heads();  // only a store with a head is announced to
  Announcement me{round, node, local_world_size};
  int64_t slot = co_await heads.announce(me, cancel);
  announced_round_ = round;
  std::optional<RoundSeat> none;
  if (slot == 1) {
    join_.folder = true;
    co_return none;
  }
  int64_t version = head.version;
  const milliseconds longest_look = state_->longest_wait_in(slot);
  // Once the round formed, the seat is read with the head: one request, not two.
  std::vector<std::string> with_head;
  if (!join_.whole_state) with_head = seat_keys(round_prefix(round), node);
  std::optional<std::string> still;  // who folded when the last wait saw no write
  for (;;) {
    auto longest = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (longest.count() <= 0) co_return none;
    if (head.last_call_deadline_ms > 0) {
      longest = std::min(
          longest, milliseconds(head.last_call_deadline_ms - wall_ms_()) + state_->longest_wait());
      if (longest.count() <= 0) co_return none;
    }
    StateSnapshot at;
    at.epoch = head.epoch;
    at.revision = head.revision;
    co_await state_->wait(at, true, std::clamp(longest, milliseconds(1), longest_look), cancel);
    std::optional<StateHead> now = co_await heads.head(round, with_head, cancel);
    if (now && now->round == round && now->complete && !join_.whole_state) {
      std::optional<RoundSeat> seat = co_await take_seat(round, node, std::move(now->with), cancel);
      if (seat && !now->closed) seat_completed_at_ = now->epoch_revision;
      co_return seat;
    }
    if (!now || now->round != round || !now->forming()) co_return none;
    bool moved = now->version != version;
    version = now->version;
    head = *now;
    if (moved) {
      still.reset();
      continue;
    }
    // Handled by a write, yet nothing moved for a whole wait with no last call running:
    // this node may have been left out (quarantined, or only a spare), which only the
    // state says, and the node must say so and wait its own way.
    if (head.taken_in >= slot) {
      if (head.last_call_deadline_ms == 0) co_return none;
      continue;
    }
    // Nothing written for a whole wait: the node that folds (slow, or gone) is taken
    // over where nothing was written for the wait before either, with the same node
    // folding (one that took over since gets two waits of its own), by one node only.
    // Not after one: under a crowd of nodes, each of the folder's requests waits its
    // turn behind theirs.
    StateHeads::Folding now_folding = co_await heads.folding(round, cancel);
    if (still == now_folding.token) {
      bool taken = co_await heads.take_over_folding(me, slot, now_folding.token, cancel);
      if (taken) {
        join_.folder = true;
        co_return none;
      }
    }
    still = now_folding.token;
  }
}

// The places the forming round `snap` keeps for nodes expected back that are gone: a
// round whose size is known must not wait for a node that cannot come back (its
// workers' peers here failed with it, so their node began this round before its
// liveness expired). Asked every absent_every_; returns whether the state was written
// (won or lost: it is read again either way).
Task<bool> DynamicJoiner::free_places_of_dead(const StateSnapshot& snap, CancelSignal& cancel) {
  auto now = Clock::now();
  if (now - absent_checked_ < absent_every_) co_return false;
  absent_checked_ = now;
  std::vector<std::string> absent = absent_expected(snap.state, wall_ms_());
  std::vector<std::string> dead = co_await dead_among_(absent, cancel);
  if (dead.empty()) co_return false;
  std::vector<std::string> known;
  for (const auto& [id, workers] : snap.state.participants) known.push_back(id);
  std::string names = node_names(dead, known);
  spdlog::warn(
      "round {}: node(s) {} expected back are gone (no sign of life); the round goes "
      "on without them{}",
      snap.state.round, names, snap.state.spares.empty() ? "" : ", spares take their places");
  co_await write(snap, without_expected(snap.state, dead), cancel);
  co_return true;
}

// The seats of a round are written together, the key `seated` last: a node without a
// seat where `seated` is there is not in the round (a spare). Where neither is there
// yet (`got`, as read with the head), the writer that completed the round may still be
// writing them: it waits for them a while (the writer may be gone too). Nothing:
// join()'s loop reads the state.
Task<std::optional<RoundSeat>> DynamicJoiner::take_seat(int round, std::string node,
                                                        std::vector<std::optional<std::string>> got,
                                                        CancelSignal& cancel) {
  std::vector<std::string> keys = seat_keys(round_prefix(round), node);
  if (got.size() != keys.size()) throw StoreError("the seat of " + node + " was not read");
  if (!got.at(0) && !got.at(1)) {
    std::vector<std::string> seated{keys[1]};
    co_await store_.wait_until_there(seated, state_->longest_wait(), cancel);
    got = co_await store_.get_now(keys, cancel);
  }
  std::optional<RoundSeat> seat;
  if (got.at(0)) seat = RoundSeat::decode(*got.at(0));
  co_return seat;
}

// Every member's seat of the round `complete`, then `seated`, in one request (a
// transaction per hundred keys on etcd, `seated` in the last).
Task<void> DynamicJoiner::write_seats(const DynamicState& complete, CancelSignal& cancel) {
  std::vector<std::string> keys, values;
  const std::string at = round_prefix(complete.round);
  const std::string seats = at + "seat/";
  for (auto& [id, seat] : seats_of(complete)) {
    keys.push_back(seats + id);
    values.push_back(std::move(seat));
  }
  keys.push_back(at + "seated");
  values.push_back(std::to_string(complete.participants.size()));
  co_await store_.multi_set(std::move(keys), std::move(values), cancel);
}

Task<bool> DynamicJoiner::write(const StateSnapshot& from, const DynamicState& to,
                                CancelSignal& cancel, const std::optional<Announcement>& on_loss) {
  auto start = Clock::now();
  std::string encoded = to.encode();
  // Nodes that announced themselves read their seats, not the state, once it
  // completes: they are woken once the seats are there.
  bool completes = to.complete && (!from.state.complete || from.state.round != to.round);
  bool seats = completes && state_->heads();
  using Wakes = StateStore::Wakes;
  Wakes wakes = !concerns_participants(from.state, to) ? Wakes::kNobody
                : seats                                ? Wakes::kParticipantsLater
                                                       : Wakes::kParticipants;
  bool won = co_await state_->write(from, encoded, wakes, on_loss, cancel);
  write_time_ = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
  lost_writes_ = won ? 0 : lost_writes_ + 1;
  if (won && seats) {
    co_await write_seats(to, cancel);
    co_await state_->wake(cancel);
  }
  co_return won;
}

// After a lost write: back off a little (more each time, at random) so that many
// nodes arriving together do not all retry in lockstep. A node others can take in
// (it announced itself) that keeps losing waits while they keep writing instead:
// each of their writes takes in the nodes announced before it, so this one most
// often need not write at all. It writes itself once the state stays still for a
// while (a few write times, within bounds: the store may be slow under load).
// Returns the state last seen.
Task<std::optional<StateSnapshot>> DynamicJoiner::back_off(std::string node, bool announced,
                                                           CancelSignal& cancel) {
  int64_t cap_us = std::min<int64_t>(20'000, int64_t{250} << std::min(lost_writes_, 7));
  auto jitter = std::chrono::microseconds(jitter_() % (cap_us + 1));
  if (!announced || lost_writes_ < 2) {  // a crowd only when writes keep losing
    co_await sleep_for(jitter, cancel);
    co_return std::nullopt;
  }
  auto still = std::chrono::duration_cast<milliseconds>(
      std::clamp<std::chrono::microseconds>(3 * write_time_, kAnnouncedWaitMin, kAnnouncedWaitMax) +
      jitter);
  StateSnapshot now = co_await state_->read(cancel);
  for (int changes = 0; changes < kAnnouncedMaxChanges; ++changes) {
    if (now.state.participants.count(node) || now.state.complete || now.state.closed) break;
    co_await state_->wait(now, false, still, cancel);
    StateSnapshot next = co_await state_->read(cancel);
    bool moved = next.version != now.version;
    now = std::move(next);
    if (!moved) break;
  }
  co_return now;
}

Task<void> DynamicJoiner::start_next_round(int round, bool failure, std::set<std::string> lost,
                                           CancelSignal& cancel) {
  began_.clear();
  for (int attempt = 0; attempt < 100; ++attempt) {
    StateSnapshot snap = co_await state_->read(cancel);
    if (snap.state.round != round || snap.state.closed) co_return;  // someone was first
    DynamicState next = next_round(snap.state, failure, lost, wall_ms_());
    bool won = co_await write(snap, next, cancel);
    if (won) {
      StateHeads* heads = state_->heads();
      began_ = hint_of(heads ? heads->written_head() : std::nullopt);
      co_return;
    }
  }
}

Task<std::optional<Quarantine>> DynamicJoiner::note_failure(std::string node, std::string reason,
                                                            CancelSignal& cancel) {
  std::optional<Quarantine> none;
  if (config_.node_failure_limit <= 0) co_return none;
  for (int attempt = 0; attempt < 100; ++attempt) {
    StateSnapshot snap = co_await state_->read(cancel);
    if (snap.state.closed) co_return none;
    int64_t now = wall_ms_();
    DynamicState next = rendezvous::note_failure(snap.state, node, reason, now, config_);
    bool won = co_await write(snap, next, cancel);
    if (!won) continue;
    if (const Quarantine* q = quarantine_of(next, node, now)) co_return *q;
    co_return none;
  }
  co_return none;
}

Task<void> DynamicJoiner::keep_out(std::string address, std::string reason, CancelSignal& cancel) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    StateSnapshot snap = co_await state_->read(cancel);
    if (snap.state.closed) co_return;
    DynamicState next = quarantine(snap.state, address, reason, wall_ms_(), config_);
    bool won = co_await write(snap, next, cancel);
    if (won) co_return;
  }
}

std::vector<std::string> DynamicJoiner::spares_in(const std::string& value) const {
  std::vector<std::string> ids;
  for (const auto& [id, workers] : state_->state_in(value).spares) ids.push_back(id);
  return ids;
}

Task<void> DynamicJoiner::close(bool failed, CancelSignal& cancel) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    StateSnapshot snap = co_await state_->read(cancel);
    if (snap.state.closed) co_return;
    DynamicState closed = snap.state;
    closed.closed = true;
    closed.failed = failed;
    bool won = co_await write(snap, closed, cancel);
    if (won) co_return;
  }
}

}  // namespace ddprun::rendezvous
