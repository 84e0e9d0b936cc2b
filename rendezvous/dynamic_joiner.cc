#include "rendezvous/dynamic_joiner.h"

#include <algorithm>
#include <thread>

namespace ddprun::rendezvous {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

DynamicJoiner::DynamicJoiner(Store& store, std::string prefix, DynamicConfig config,
                             WallClock wall_ms)
    : store_(store), prefix_(std::move(prefix)), config_(config), wall_ms_(std::move(wall_ms)) {}

std::string DynamicJoiner::round_prefix(int round) const {
  return prefix_ + "round/" + std::to_string(round) + "/";
}

DynamicJoiner::Snapshot DynamicJoiner::read() {
  Snapshot s;
  // All in one round trip where the store can (and consistent with each other).
  auto now = store_.get_now(
      std::vector<std::string>{prefix_ + "version", prefix_ + "epoch", prefix_ + "state"});
  s.version = now[0] && !now[0]->empty() ? std::stoll(*now[0]) : 0;
  s.epoch = now[1] && !now[1]->empty() ? std::stoll(*now[1]) : 0;
  if (now[2]) {
    s.raw = *now[2];
    s.state = DynamicState::from_json(s.raw);
  }
  return s;
}

// Changes a node already in the forming round must hear of; others (one more node
// joining) concern only nodes that still have to act.
static bool concerns_participants(const DynamicState& from, const DynamicState& to) {
  return from.complete != to.complete || from.round != to.round || from.closed != to.closed ||
         from.last_call_deadline_ms != to.last_call_deadline_ms;
}

bool DynamicJoiner::write(const Snapshot& from, const DynamicState& to) {
  std::string desired = to.to_json();
  std::string now = store_.compare_set(prefix_ + "state", from.raw, desired);
  if (now != desired) {
    // Lost to another node: back off a little (more each time, at random) so that
    // many nodes arriving together do not all retry in lockstep.
    ++lost_writes_;
    int64_t cap_us = std::min<int64_t>(20'000, int64_t{250} << std::min(lost_writes_, 7));
    std::this_thread::sleep_for(std::chrono::microseconds(jitter_() % (cap_us + 1)));
    return false;
  }
  lost_writes_ = 0;
  int64_t v = store_.add(prefix_ + "version", 1);
  store_.set(prefix_ + "ver/" + std::to_string(v), "1");
  if (concerns_participants(from.state, to)) {
    int64_t e = store_.add(prefix_ + "epoch", 1);
    store_.set(prefix_ + "epoch/" + std::to_string(e), "1");
  }
  return true;
}

DynamicState DynamicJoiner::join(const std::string& node, int local_world_size, int min_round,
                                 milliseconds timeout, const std::atomic<bool>& cancelled) {
  auto deadline = Clock::now() + timeout;
  while (true) {
    if (cancelled) throw Error("rendezvous cancelled");
    Snapshot snap = read();
    Action a;  // default: wait for the state to change
    if (snap.state.round >= min_round || snap.state.closed) {
      a = decide_join(snap.state, node, local_world_size, wall_ms_(), config_);
    }
    if (a.kind == Action::Kind::kClosed) {
      throw RendezvousClosedError("the run has already finished");
    }
    if (a.kind == Action::Kind::kDone) {
      if (announced_round_ >= 0) {
        store_.delete_key(announce_dir(announced_round_) + node);
        announced_round_ = -1;
      }
      return snap.state;
    }
    if (a.kind == Action::Kind::kWrite) {
      bool asked_to_join = snap.state.complete && !snap.state.waiting.count(node);
      if (write(snap, with_announced(snap.state, a.next, node, local_world_size)) &&
          asked_to_join) {
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
    if (now >= deadline) {
      throw TimeoutError(std::to_string(snap.state.participants.size()) +
                         " node(s) joined, at least " + std::to_string(config_.min_nodes) +
                         " needed");
    }
    auto wait_for = std::chrono::duration_cast<milliseconds>(deadline - now);
    if (a.wake_at_ms > 0) wait_for = std::min(wait_for, milliseconds(a.wake_at_ms - wall_ms_()));
    wait_for = std::clamp(wait_for, milliseconds(1), milliseconds(1000));
    // A node already in the forming round sleeps through other nodes joining: N
    // joining nodes then cost N wake-ups, not N squared.
    bool participant = !snap.state.complete && snap.state.participants.count(node) > 0;
    std::string wake_key = participant ? "epoch/" + std::to_string(snap.epoch + 1)
                                       : "ver/" + std::to_string(snap.version + 1);
    try {
      store_.wait({prefix_ + wake_key}, wait_for);
    } catch (const TimeoutError&) {
      // the last call ended or a slice passed: decide again
    }
  }
}

std::string DynamicJoiner::announce_dir(int round) const {
  return prefix_ + "joining/" + std::to_string(round) + "/";
}

// Where the store can list keys, joining nodes announce themselves under
// "joining/<round>/", and a node that writes the forming round adds every announced
// node with it: nodes arriving together need a few writes instead of one each (each
// of which all the others would have to redo).
DynamicState DynamicJoiner::with_announced(const DynamicState& read, DynamicState next,
                                           const std::string& self, int local_world_size) {
  if (read.complete || read.closed || next.complete || !listing_) return next;
  std::string dir = announce_dir(read.round);
  auto announced = store_.list_prefix(dir);
  if (!announced) {
    listing_ = false;  // TCPStore: every node writes for itself
    return next;
  }
  if (announced_round_ != read.round) {
    // Whoever lists after this sees us (two nodes announcing at once may miss each
    // other: each then simply writes for itself).
    store_.set(dir + self, std::to_string(local_world_size));
    announced_round_ = read.round;
  }
  int64_t now = wall_ms_();
  for (const auto& [key, value] : *announced) {
    std::string other = key.substr(dir.size());
    if (other == self || next.complete || next.participants.count(other)) continue;
    int workers = 0;
    try {
      workers = std::stoi(value);
    } catch (const std::exception&) {
      continue;  // not an announcement
    }
    Action theirs = decide_join(next, other, workers, now, config_);
    if (theirs.kind == Action::Kind::kWrite && theirs.next.participants.count(other)) {
      next = theirs.next;
    }
  }
  return next;
}

void DynamicJoiner::start_next_round(int round, bool failure, const std::set<std::string>& alive) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    Snapshot snap = read();
    if (snap.state.round != round || snap.state.closed) return;  // someone was first
    if (write(snap, next_round(snap.state, failure, alive))) return;
  }
}

}  // namespace ddprun::rendezvous

namespace ddprun::rendezvous {

void DynamicJoiner::close() {
  for (int attempt = 0; attempt < 100; ++attempt) {
    Snapshot snap = read();
    if (snap.state.closed) return;
    DynamicState closed = snap.state;
    closed.closed = true;
    if (write(snap, closed)) return;
  }
}

}  // namespace ddprun::rendezvous
