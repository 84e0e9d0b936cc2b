#include "rendezvous/join/generic_state_store.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include "common/error.h"

namespace ddprun::rendezvous {

std::string announce_dir(const std::string& prefix, int round) {
  return prefix + "joining/" + std::to_string(round) + "/";
}

std::vector<std::pair<std::string, int>> parse_announcements(
    const std::string& dir, const std::vector<std::pair<std::string, std::string>>& listed) {
  std::vector<std::pair<std::string, int>> out;
  for (const auto& [key, value] : listed) {
    if (key.size() <= dir.size() || key.compare(0, dir.size(), dir) != 0) continue;
    try {
      out.emplace_back(key.substr(dir.size()), std::stoi(value));
    } catch (const std::exception&) {
      // not an announcement
    }
  }
  return out;
}

// A counter's value (0 where the key is not there); StoreError naming the key where it
// holds something else.
static int64_t counter_in(const std::string& key, const std::optional<std::string>& value) {
  if (!value || value->empty()) return 0;
  int64_t n = 0;
  auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), n);
  if (ec != std::errc() || end != value->data() + value->size()) {
    throw StoreError("rendezvous store: " + key + " does not hold a number");
  }
  return n;
}

GenericStateStore::GenericStateStore(store::LoopStore& store, std::string prefix)
    : store_(store), prefix_(std::move(prefix)) {}

Task<StateSnapshot> GenericStateStore::read(CancelSignal& cancel) {
  StateSnapshot s;
  if (written_) {
    s = std::move(*written_);
    written_.reset();
    co_return s;
  }
  // All in one round trip where the store can (and consistent with each other).
  std::vector<std::string> keys{prefix_ + "version", prefix_ + "epoch", prefix_ + "state"};
  std::vector<std::string> asked = keys;
  auto now = co_await store_.get_now(std::move(asked), cancel);
  s.version = counter_in(keys[0], now[0]);
  s.epoch = counter_in(keys[1], now[1]);
  if (now[2]) {
    s.raw = *now[2];
    s.state = DynamicState::decode(s.raw);
  }
  co_return s;
}

// The next read() is this write's state: no request. (Where a write raced ahead of ours
// by its counters, the numbers are a step behind: a wait on them returns at once and
// the state is read again.) Only until this node waits or sees a later version
// (forget_written()): a node that began a round and joins it after others completed it
// read its own beginning back, and wrote the completed round again.
void GenericStateStore::remember_written(int64_t version, int64_t epoch, const std::string& state) {
  StateSnapshot mine;
  mine.version = version;
  mine.epoch = epoch;
  mine.raw = state;
  mine.state = DynamicState::decode(state);
  written_head_ = head_in(mine);
  written_ = std::move(mine);
}

void GenericStateStore::forget_written(int64_t seen_version) {
  if (written_ && written_->version < seen_version) written_.reset();
}

Task<bool> GenericStateStore::write(const StateSnapshot& from, const std::string& to, Wakes wakes,
                                    const std::optional<Announcement>& on_loss,
                                    CancelSignal& cancel) {
  // Every argument is a local: GCC 12 (docs/contributing.md) mishandles temporaries made inside a
  // co_await.
  std::string state = prefix_ + "state";
  std::string held = co_await store_.compare_set(state, from.raw, to, cancel);
  if (held != to) {
    if (on_loss) co_await announce(*on_loss, cancel);
    co_return false;
  }
  // The head first: a node that sees the version move finds the head of that write or
  // a later one's.
  std::string first_line = to.substr(0, to.find('\n'));
  std::string head_key = prefix_ + "head";
  co_await store_.set(head_key, first_line, cancel);
  // The announcements it took in are those of the round it was written over.
  if (from.state.round == listed_round_ && next_slot_ - 1 > said_in_) {
    said_in_ = next_slot_ - 1;
    std::string in = announce_dir(prefix_, listed_round_) + "in";
    std::string count = std::to_string(said_in_);
    co_await store_.set(in, count, cancel);
  }
  const std::string one = "1";
  std::string version = prefix_ + "version";
  int64_t v = co_await store_.add(version, 1, cancel);
  std::string changed = prefix_ + "ver/" + std::to_string(v);
  co_await store_.set(changed, one, cancel);
  int64_t e = from.epoch;
  wake_later_ = 0;
  if (wakes != Wakes::kNobody) {
    std::string epoch = prefix_ + "epoch";
    e = co_await store_.add(epoch, 1, cancel);
    if (wakes == Wakes::kParticipantsLater) {
      wake_later_ = e;
    } else {
      std::string moved = prefix_ + "epoch/" + std::to_string(e);
      co_await store_.set(moved, one, cancel);
    }
  }
  remember_written(v, e, to);
  co_return true;
}

Task<void> GenericStateStore::wake(CancelSignal& cancel) {
  if (wake_later_ == 0) co_return;
  std::string moved = prefix_ + "epoch/" + std::to_string(std::exchange(wake_later_, 0));
  const std::string one = "1";
  co_await store_.set(moved, one, cancel);
}

Task<void> GenericStateStore::wait(const StateSnapshot& from, bool participant,
                                   std::chrono::milliseconds timeout, CancelSignal& cancel) {
  written_.reset();  // whatever ends the wait, the state may have moved on
  std::vector<std::string> key{prefix_ + (participant ? "epoch/" + std::to_string(from.epoch + 1)
                                                      : "ver/" + std::to_string(from.version + 1))};
  // Whether it came or the time passed, the caller decides again.
  co_await store_.wait_until_there(std::move(key), timeout, cancel);
}

Task<std::vector<std::pair<std::string, int>>> GenericStateStore::announced(int round,
                                                                            CancelSignal& cancel) {
  if (round != listed_round_) {
    listed_round_ = round;
    next_slot_ = 1;
    listed_.clear();
    said_in_ = 0;
  }
  std::string dir = announce_dir(prefix_, round);
  std::string count = dir + "n";
  int64_t last = co_await store_.add(count, 0, cancel);
  std::vector<std::string> slots;
  for (int64_t i = next_slot_; i <= last; ++i) {
    slots.push_back(dir + std::to_string(i));
  }
  if (slots.empty()) co_return listed_;
  auto values = co_await store_.get_now(std::move(slots), cancel);
  for (const auto& value : values) {
    // A slot counted whose value is not there yet: read again from it next time.
    if (!value) break;
    ++next_slot_;
    // "<local world size> <node>"
    auto space = value->find(' ');
    if (space == std::string::npos) continue;
    try {
      listed_.emplace_back(value->substr(space + 1), std::stoi(value->substr(0, space)));
    } catch (const std::exception&) {
      // not an announcement
    }
  }
  co_return listed_;
}

Task<int64_t> GenericStateStore::announce(const Announcement& a, CancelSignal& cancel) {
  std::string dir = announce_dir(prefix_, a.round);
  std::string count = dir + "n";
  int64_t slot = co_await store_.add(count, 1, cancel);
  std::string key = dir + std::to_string(slot);
  std::string value = std::to_string(a.local_world_size) + " " + a.node;
  co_await store_.set(key, value, cancel);
  co_return slot;
}

// How much longer a node waits for its round before it looks at the head again, for
// each node announced ahead of it. With every node looking each second, 16,384
// simulated nodes spent most of a 2-core store host's time on those looks.
constexpr std::chrono::microseconds kWaitPerNodeAhead{1000};

std::chrono::milliseconds GenericStateStore::longest_wait_in(int64_t slot) const {
  auto behind = std::chrono::duration_cast<std::chrono::milliseconds>(
      kWaitPerNodeAhead * std::max<int64_t>(slot - 1, 0));
  return std::max(longest_wait(), behind);
}

// `joining/<round>/folder` names the slot of the node that folds now (none: slot 1's).
Task<StateHeads::Folding> GenericStateStore::folding(int round, CancelSignal& cancel) {
  std::vector<std::string> key{announce_dir(prefix_, round) + "folder"};
  auto now = co_await store_.get_now(std::move(key), cancel);
  Folding f;
  f.token = now.at(0).value_or("");
  co_return f;
}

Task<bool> GenericStateStore::take_over_folding(const Announcement& a, int64_t slot,
                                                const std::string& from, CancelSignal& cancel) {
  std::string key = announce_dir(prefix_, a.round) + "folder";
  std::string mine = std::to_string(slot);
  std::string held = co_await store_.compare_set(key, from, mine, cancel);
  co_return held == mine;
}

Task<void> GenericStateStore::wait_head(const StateHead& from, std::chrono::milliseconds timeout,
                                        CancelSignal& cancel) {
  written_.reset();
  std::vector<std::string> key{prefix_ + "ver/" + std::to_string(from.version + 1)};
  co_await store_.wait_until_there(std::move(key), timeout, cancel);
}

Task<void> GenericStateStore::wait_announced(int round, std::chrono::milliseconds timeout,
                                             CancelSignal& cancel) {
  written_.reset();
  int64_t next = round == listed_round_ ? next_slot_ : 1;
  std::vector<std::string> key{announce_dir(prefix_, round) + std::to_string(next)};
  co_await store_.wait_until_there(std::move(key), timeout, cancel);
}

Task<std::optional<StateHead>> GenericStateStore::head(int round, std::vector<std::string> with,
                                                       CancelSignal& cancel) {
  std::vector<std::string> keys{prefix_ + "head", prefix_ + "version", prefix_ + "epoch"};
  if (round >= 0) keys.push_back(announce_dir(prefix_, round) + "in");
  size_t own = keys.size();
  keys.insert(keys.end(), with.begin(), with.end());
  std::vector<std::string> asked = keys;
  auto now = co_await store_.get_now(std::move(asked), cancel);
  std::optional<StateHead> none;
  StateHead h;
  h.version = counter_in(keys[1], now[1]);
  forget_written(h.version);
  h.epoch = counter_in(keys[2], now[2]);
  if (round >= 0) h.taken_in = counter_in(keys[3], now[3]);
  h.with.assign(now.begin() + static_cast<std::ptrdiff_t>(own), now.end());
  if (now[0]) {
    DynamicState line = DynamicState::decode(*now[0]);
    h.exists = true;
    h.round = line.round;
    h.complete = line.complete;
    h.closed = line.closed;
    h.last_call_deadline_ms = line.last_call_deadline_ms;
  } else if (h.version > 0) {
    co_return none;  // a state without a head (written by an older agent)
  }
  none = h;
  co_return none;
}

}  // namespace ddprun::rendezvous
