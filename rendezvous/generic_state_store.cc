#include "rendezvous/generic_state_store.h"


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

GenericStateStore::GenericStateStore(store::LoopStore& store, std::string prefix)
    : store_(store), prefix_(std::move(prefix)) {}

Task<StateSnapshot> GenericStateStore::read(CancelSignal& cancel) {
  StateSnapshot s;
  // All in one round trip where the store can (and consistent with each other).
  std::vector<std::string> keys{prefix_ + "version", prefix_ + "epoch", prefix_ + "state"};
  auto now = co_await store_.get_now(std::move(keys), cancel);
  s.version = now[0] && !now[0]->empty() ? std::stoll(*now[0]) : 0;
  s.epoch = now[1] && !now[1]->empty() ? std::stoll(*now[1]) : 0;
  if (now[2]) {
    s.raw = *now[2];
    s.state = DynamicState::decode(s.raw);
  }
  co_return s;
}

Task<bool> GenericStateStore::write(const StateSnapshot& from, const std::string& to,
                                    bool wakes_participants,
                                    const std::optional<Announcement>& on_loss,
                                    CancelSignal& cancel) {
  // Every argument is a local: GCC 12 mishandles temporaries made inside a co_await.
  std::string state = prefix_ + "state";
  std::string held = co_await store_.compare_set(state, from.raw, to, cancel);
  if (held != to) {
    if (on_loss) {
      std::string dir = announce_dir(prefix_, on_loss->round);
      std::string count = dir + "n";
      int64_t slot = co_await store_.add(count, 1, cancel);
      std::string key = dir + std::to_string(slot);
      std::string value = std::to_string(on_loss->local_world_size) + " " + on_loss->node;
      co_await store_.set(key, value, cancel);
    }
    co_return false;
  }
  const std::string one = "1";
  std::string version = prefix_ + "version";
  int64_t v = co_await store_.add(version, 1, cancel);
  std::string changed = prefix_ + "ver/" + std::to_string(v);
  co_await store_.set(changed, one, cancel);
  if (wakes_participants) {
    std::string epoch = prefix_ + "epoch";
    int64_t e = co_await store_.add(epoch, 1, cancel);
    std::string moved = prefix_ + "epoch/" + std::to_string(e);
    co_await store_.set(moved, one, cancel);
  }
  co_return true;
}

Task<void> GenericStateStore::wait(const StateSnapshot& from, bool participant,
                                   std::chrono::milliseconds timeout, CancelSignal& cancel) {
  std::vector<std::string> key{prefix_ + (participant ? "epoch/" + std::to_string(from.epoch + 1)
                                                      : "ver/" + std::to_string(from.version + 1))};
  // Whether it came or the time passed, the caller decides again.
  co_await store_.wait_for(std::move(key), timeout, cancel);
}

Task<std::vector<std::pair<std::string, int>>> GenericStateStore::announced(int round,
                                                                             CancelSignal& cancel) {
  std::string dir = announce_dir(prefix_, round);
  std::string count = dir + "n";
  int64_t last = co_await store_.add(count, 0, cancel);
  std::vector<std::string> slots;
  for (int64_t i = 1; i <= last; ++i) {
    slots.push_back(dir + std::to_string(i));
  }
  std::vector<std::pair<std::string, int>> out;
  if (slots.empty()) co_return out;
  auto values = co_await store_.get_now(std::move(slots), cancel);
  for (const auto& value : values) {
    // "<local world size> <node>"; a slot whose value is not there yet is skipped.
    auto space = value ? value->find(' ') : std::string::npos;
    if (space == std::string::npos) continue;
    try {
      out.emplace_back(value->substr(space + 1), std::stoi(value->substr(0, space)));
    } catch (const std::exception&) {
      // not an announcement
    }
  }
  co_return out;
}

}  // namespace ddprun::rendezvous
