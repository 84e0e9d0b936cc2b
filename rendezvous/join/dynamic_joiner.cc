#include "rendezvous/join/dynamic_joiner.h"

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>

#include "common/loop_waits.h"
#include "rendezvous/join/generic_state_store.h"
#include "rendezvous/join/join_notices.h"
#include "rendezvous/round/round_end.h"

namespace ddprun::rendezvous {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

DynamicJoiner::DynamicJoiner(store::LoopStore& store, std::unique_ptr<StateStore> state,
                             std::string prefix, DynamicConfig config, WallClock wall_ms)
    : store_(store),
      state_(std::move(state)),
      prefix_(std::move(prefix)),
      config_(config),
      wall_ms_(std::move(wall_ms)),
      notices_(config_, wall_ms_) {}

DynamicJoiner::DynamicJoiner(store::LoopStore& store, const std::string& prefix,
                             DynamicConfig config, WallClock wall_ms)
    : DynamicJoiner(store, std::make_unique<GenericStateStore>(store, prefix), prefix, config,
                    std::move(wall_ms)) {}

std::string DynamicJoiner::round_prefix(int round) const {
  return prefix_ + "round/" + std::to_string(round) + "/";
}

// What this node does with the state it read: the rules' decision, except that a
// round closed since it completed with this node in it is still its round (another
// member's workers failed for the last time, or finished, before this node read it):
// the node takes its place, and learns how the round ended from the round itself.
Action DynamicJoiner::decide(const DynamicState& state, const std::string& node,
                             int local_world_size, int min_round) const {
  Action a;  // default: wait for the state to change
  if (state.round >= min_round || state.closed) {
    a = decide_join(state, node, local_world_size, wall_ms_(), config_);
  }
  if (a.kind == Action::Kind::kClosed && state.complete && state.round >= min_round &&
      state.participants.count(node)) {
    a.kind = Action::Kind::kDone;
  }
  return a;
}

// How long the next wait may last: to the deadline (`left`), or to the rules' next
// moment (the last call's end), within the state store's longest wait.
milliseconds DynamicJoiner::wait_slice(const Action& a, Clock::duration left) const {
  auto wait_for = std::chrono::duration_cast<milliseconds>(left);
  if (a.wake_at_ms > 0) wait_for = std::min(wait_for, milliseconds(a.wake_at_ms - wall_ms_()));
  return std::clamp(wait_for, milliseconds(1), state_->longest_wait());
}

// This node's place in the completed round it read.
JoinedRound DynamicJoiner::seat_from(StateSnapshot snap, const std::string& node) {
  JoinedRound joined;
  std::vector<std::string> members = ordered_members(snap.state);
  auto rank = std::lower_bound(members.begin(), members.end(), node) - members.begin();
  joined.round = snap.state.round;
  joined.seat = seat_in(snap.state, members, static_cast<int>(rank));
  joined.state = std::move(snap.state);
  joined.from_spare = join_.waited_as_spare;
  seated(snap.epoch_revision);
  return joined;
}

// The place this node took by announcing itself (arrive(), announce_and_wait()).
JoinedRound DynamicJoiner::announced_seat(RoundSeat seat, const std::string& node) {
  JoinedRound joined;
  joined.round = announced_round_;
  joined.seat = std::move(seat);
  notices_.kept_out(joined.seat.quarantined, node);
  joined.from_spare = join_.waited_as_spare;
  seated(std::exchange(seat_completed_at_, 0));
  return joined;
}

// Each turn reads the state (or takes what a back-off read), decides, and either has
// its place, writes (then reads again), or waits for a change.
Task<JoinedRound> DynamicJoiner::join(std::string node, int local_world_size, int min_round,
                                      milliseconds timeout, CancelSignal& cancel,
                                      bool whole_state) {
  auto deadline = Clock::now() + timeout;
  join_ = {.whole_state = whole_state};
  if (auto seat = co_await arrive(node, local_world_size, min_round, deadline, cancel)) {
    co_return announced_seat(std::move(*seat), node);
  }
  std::optional<StateSnapshot> seen;  // the state as a back-off left it
  while (true) {
    cancel.check();
    if (!seen) seen = co_await state_->read(cancel);
    StateSnapshot snap = std::move(*seen);
    seen.reset();
    Action a = decide(snap.state, node, local_world_size, min_round);
    notices_.kept_out(snap.state.quarantined, node);
    bool spare = snap.state.spares.count(node) > 0;
    if (a.kind == Action::Kind::kClosed) notices_.closed(snap.state, node, spare);
    if (notices_.waiting(snap.state, node, spare, a)) deadline = Clock::now() + timeout;
    join_.waited_as_spare = join_.waited_as_spare || spare;
    if (a.kind == Action::Kind::kDone) co_return seat_from(std::move(snap), node);
    bool joins = a.kind == Action::Kind::kWrite && !snap.state.complete &&
                 !snap.state.participants.count(node) && a.next.participants.count(node);
    if (joins && state_->heads() && !join_.folder && announced_round_ != snap.state.round) {
      // Into a forming round by announcing: the first to announce writes for all.
      auto seat =
          co_await announce_and_wait(head_in(snap), node, local_world_size, deadline, cancel);
      if (seat) co_return announced_seat(std::move(*seat), node);
      if (!join_.folder) continue;
    }
    if (a.kind == Action::Kind::kWrite) {
      seen = co_await write_turn(snap, a.next, node, local_world_size, cancel);
      continue;  // re-read whether or not our write won
    }
    auto now = Clock::now();
    // A spare waits for a running job, not for a round to form: no deadline then.
    if (notices_.spare() && snap.state.complete) deadline = now + timeout;
    if (now >= deadline) notices_.timed_out(snap.state);
    milliseconds wait_for = wait_slice(a, deadline - now);
    // A node already in the forming round sleeps through other nodes joining: N
    // joining nodes then cost N wake-ups, not N squared. After the wait (a change, the
    // last call's end or a slice passed) it decides again.
    bool participant = !snap.state.complete && snap.state.participants.count(node) > 0;
    // In the forming round, or a spare for it (where every member is gone, only spares
    // are left to notice).
    bool forming_here = participant || (!snap.state.complete && snap.state.spares.count(node));
    if (forming_here && dead_among_ && !absent_expected(snap.state, wall_ms_()).empty()) {
      bool freed = co_await free_places_of_dead(snap, cancel);
      if (freed) continue;
      wait_for = std::min(wait_for, absent_every_);
    }
    if (participant && join_.folder && snap.state.round == announced_round_) {
      // The first to announce itself writes in the nodes that announced after it.
      Announced announced = co_await state_->announced(snap.state.round, cancel);
      DynamicState next =
          take_in_announced(snap.state, snap.state, node, announced, wall_ms_(), config_);
      if (next != snap.state) {
        bool won = co_await write(snap, next, cancel);
        if (!won) seen = co_await back_off(node, true, cancel);
        continue;
      }
      co_await state_->heads()->wait_announced(snap.state.round, wait_for, cancel);
      continue;
    }
    co_await state_->wait(snap, participant, wait_for, cancel);
  }
}

// This node has its place: it no longer waits as a spare, and its announcement is
// spent (an announcement stays in the store: the next writer skips a node already in;
// etcd's goes with the node's lease).
void DynamicJoiner::seated(int64_t completed_at) {
  notices_.seated();
  epoch_revision_ = completed_at;  // 0 where not known: waits read first
  announced_round_ = -1;
}

}  // namespace ddprun::rendezvous
