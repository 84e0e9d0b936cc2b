#include "rendezvous/dynamic_joiner.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "common/loop_waits.h"
#include "rendezvous/generic_state_store.h"

namespace ddprun::rendezvous {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How long an announced node lets the state stay still before it writes itself (at
// least, at most), and how many others' writes it waits through.
constexpr auto kAnnouncedWaitMin = std::chrono::microseconds(10'000);
constexpr auto kAnnouncedWaitMax = std::chrono::microseconds(200'000);
constexpr int kAnnouncedMaxChanges = 32;

DynamicJoiner::DynamicJoiner(store::Store& store, std::unique_ptr<StateStore> state, std::string prefix,
                             DynamicConfig config, WallClock wall_ms)
    : store_(store),
      state_(std::move(state)),
      prefix_(std::move(prefix)),
      config_(config),
      wall_ms_(std::move(wall_ms)) {}

DynamicJoiner::DynamicJoiner(store::LoopStore& store, const std::string& prefix, DynamicConfig config,
                             WallClock wall_ms)
    : DynamicJoiner(store.store(), std::make_unique<GenericStateStore>(store, prefix), prefix,
                    config,
                    std::move(wall_ms)) {}

std::string DynamicJoiner::round_prefix(int round) const {
  return prefix_ + "round/" + std::to_string(round) + "/";
}

// Changes a node already in the forming round must hear of; others (one more node
// joining) concern only nodes that still have to act.
static bool concerns_participants(const DynamicState& from, const DynamicState& to) {
  return from.complete != to.complete || from.round != to.round || from.closed != to.closed ||
         from.last_call_deadline_ms != to.last_call_deadline_ms;
}

bool DynamicJoiner::write(const StateSnapshot& from, const DynamicState& to,
                          const std::optional<Announcement>& on_loss) {
  auto start = Clock::now();
  bool won = state_->write(from, to.encode(), concerns_participants(from.state, to), on_loss);
  write_time_ = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
  lost_writes_ = won ? 0 : lost_writes_ + 1;
  return won;
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
  StateSnapshot now = state_->read();
  for (int changes = 0; changes < kAnnouncedMaxChanges; ++changes) {
    if (now.state.participants.count(node) || now.state.complete || now.state.closed) break;
    co_await state_->wait(now, false, still, cancel);
    StateSnapshot next = state_->read();
    bool moved = next.version != now.version;
    now = std::move(next);
    if (!moved) break;
  }
  co_return now;
}

Task<DynamicState> DynamicJoiner::join(std::string node, int local_world_size, int min_round,
                                       milliseconds timeout, CancelSignal& cancel) {
  auto deadline = Clock::now() + timeout;
  std::optional<StateSnapshot> seen;  // the state as a back-off left it
  while (true) {
    cancel.check();
    StateSnapshot snap = seen ? std::move(*seen) : state_->read();
    seen.reset();
    Action a;  // default: wait for the state to change
    if (snap.state.round >= min_round || snap.state.closed) {
      a = decide_join(snap.state, node, local_world_size, wall_ms_(), config_);
    }
    say_kept_out(snap.state, node);
    bool spare = snap.state.spares.count(node) > 0;
    if (a.kind == Action::Kind::kClosed) {
      spare_ = false;
      if (spare) {
        throw SpareNotNeeded(snap.state.failed ? "the job failed without needing this spare node"
                                               : "the job finished without needing this spare node",
                             snap.state.failed);
      }
      if (const Quarantine* q = quarantine_of(snap.state, node, wall_ms_())) {
        throw RendezvousClosedError("the job ended while this node was quarantined (" +
                                    q->reason + ")");
      }
      throw RendezvousClosedError(snap.state.failed ? "the run has already ended (it failed)"
                                                    : "the run has already finished");
    }
    if (a.kind == Action::Kind::kWait && !snap.state.participants.count(node)) {
      if (const Quarantine* q = quarantine_of(snap.state, node, wall_ms_())) {
        if (q->until_ms != quarantined_until_) {
          spdlog::warn("this node is quarantined for {} s ({}); it waits to join again",
                       (q->until_ms - wall_ms_() + 999) / 1000, q->reason);
        }
        quarantined_until_ = q->until_ms;
        deadline = Clock::now() + timeout;  // kept out on purpose: not a join that failed
      }
    }
    if (spare && !spare_) {
      spdlog::warn("waiting as a spare: round {} runs with its maximum of {} node(s); this node "
                   "takes the place of the first that fails or leaves",
                   snap.state.round, config_.max_nodes);
    }
    spare_ = spare;
    if (a.kind == Action::Kind::kDone) {
      spare_ = false;
      if (announced_round_ >= 0) {
        state_->withdraw(announced_round_, node);
        announced_round_ = -1;
      }
      epoch_revision_ = snap.epoch_revision;
      co_return snap.state;
    }
    if (a.kind == Action::Kind::kWrite) {
      // A spare's write leaves the running round alone.
      bool asked_to_join = snap.state.complete && a.next.waiting.count(node) > 0;
      DynamicState next = with_announced(snap.state, a.next, node);
      // A lost write leaves word that this node wants in: the next writer takes it in.
      std::optional<Announcement> on_loss;
      if (!snap.state.complete && announced_round_ != snap.state.round) {
        on_loss = Announcement{snap.state.round, node, local_world_size};
      }
      bool won = write(snap, next, on_loss);
      if (!won && on_loss) announced_round_ = snap.state.round;
      if (!won) {
        seen = co_await back_off(node, announced_round_ == snap.state.round && !snap.state.complete,
                                 cancel);
      }
      if (won && asked_to_join) {
        // We arrived while a round runs: end it for everyone so the next one has us.
        std::set<std::string> members;
        for (const auto& [id, n] : snap.state.participants) members.insert(id);
        store_.compare_set(round_prefix(snap.state.round) + "over", "",
                           "membership|0|node " + node + " joins");
        start_next_round(snap.state.round, false, members);
      }
      continue;  // re-read whether or not our write won
    }
    auto now = Clock::now();
    // A spare waits for a running job, not for a round to form: no deadline then.
    if (spare_ && snap.state.complete) deadline = now + timeout;
    if (now >= deadline) {
      std::string out;
      int64_t wall = wall_ms_();
      for (const auto& [address, q] : snap.state.quarantined) {
        if (q.until_ms <= wall) continue;
        out += (out.empty() ? "; quarantined: " : ", ") + address + " for " +
               std::to_string((q.until_ms - wall + 999) / 1000) + " s more (" + q.reason + ")";
      }
      throw TimeoutError(std::to_string(snap.state.participants.size()) +
                         " node(s) joined, at least " + std::to_string(config_.min_nodes) +
                         " needed" + out);
    }
    auto wait_for = std::chrono::duration_cast<milliseconds>(deadline - now);
    if (a.wake_at_ms > 0) wait_for = std::min(wait_for, milliseconds(a.wake_at_ms - wall_ms_()));
    wait_for = std::clamp(wait_for, milliseconds(1), state_->longest_wait());
    // A node already in the forming round sleeps through other nodes joining: N
    // joining nodes then cost N wake-ups, not N squared. After the wait (a change, the
    // last call's end or a slice passed) it decides again.
    bool participant = !snap.state.complete && snap.state.participants.count(node) > 0;
    co_await state_->wait(snap, participant, wait_for, cancel);
  }
}

// Other nodes kept out (quarantined) while this one joins, each said once on the
// console with why: a node that failed its preflight before it ever joined is named
// here first.
void DynamicJoiner::say_kept_out(const DynamicState& state, const std::string& self) {
  int64_t now = wall_ms_();
  std::string own = node_address(self);
  for (const auto& [address, q] : state.quarantined) {
    if (q.until_ms <= now || address == own) continue;
    auto [it, added] = said_out_.try_emplace(address, q.until_ms);
    if (!added && it->second == q.until_ms) continue;
    it->second = q.until_ms;
    spdlog::warn("node {} is kept out of the job for {} s: {}", address,
                 (q.until_ms - now + 999) / 1000, q.reason);
  }
}

// Nodes that lost a write announced themselves, and a node that writes the forming round adds every announced node with
// it: nodes arriving together need a few writes instead of one each (each of which
// all the others would have to redo).
DynamicState DynamicJoiner::with_announced(const DynamicState& read, DynamicState next,
                                           const std::string& self) {
  if (read.complete || read.closed || next.complete) return next;
  int64_t now = wall_ms_();
  for (const auto& [other, workers] : state_->announced(read.round)) {
    if (other == self || next.complete || next.participants.count(other)) continue;
    // One state moved through every announced node's step (a copy each would make a
    // write cost announced x nodes).
    bool was_spare = next.spares.count(other) > 0;
    Action theirs = decide_join(std::move(next), other, workers, now, config_);
    next = std::move(theirs.next);
    bool taken_in = theirs.kind == Action::Kind::kWrite && next.participants.count(other);
    // A node that would only wait as a spare is left to say so itself.
    if (!taken_in && !was_spare) next.spares.erase(other);
  }
  return next;
}

void DynamicJoiner::start_next_round(int round, bool failure, const std::set<std::string>& alive) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    StateSnapshot snap = state_->read();
    if (snap.state.round != round || snap.state.closed) return;  // someone was first
    if (write(snap, next_round(snap.state, failure, alive, wall_ms_()))) return;
  }
}

}  // namespace ddprun::rendezvous

namespace ddprun::rendezvous {

std::optional<Quarantine> DynamicJoiner::note_failure(const std::string& address,
                                                      const std::string& reason) {
  if (config_.node_failure_limit <= 0) return std::nullopt;
  for (int attempt = 0; attempt < 100; ++attempt) {
    StateSnapshot snap = state_->read();
    if (snap.state.closed) return std::nullopt;
    int64_t now = wall_ms_();
    DynamicState next = rendezvous::note_failure(snap.state, address, reason, now, config_);
    if (!write(snap, next)) continue;
    if (const Quarantine* q = quarantine_of(next, address, now)) return *q;
    return std::nullopt;
  }
  return std::nullopt;
}

void DynamicJoiner::keep_out(const std::string& address, const std::string& reason) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    StateSnapshot snap = state_->read();
    if (snap.state.closed) return;
    if (write(snap, quarantine(snap.state, address, reason, wall_ms_(), config_))) return;
  }
}

std::vector<std::string> DynamicJoiner::spares_in(const std::string& value) const {
  std::vector<std::string> ids;
  for (const auto& [id, workers] : state_->state_in(value).spares) ids.push_back(id);
  return ids;
}

void DynamicJoiner::close(bool failed) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    StateSnapshot snap = state_->read();
    if (snap.state.closed) return;
    DynamicState closed = snap.state;
    closed.closed = true;
    closed.failed = failed;
    if (write(snap, closed)) return;
  }
}

}  // namespace ddprun::rendezvous
