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
    : store_(store.store()), waits_(store), prefix_(std::move(prefix)) {}

StateSnapshot GenericStateStore::read() {
  StateSnapshot s;
  // All in one round trip where the store can (and consistent with each other).
  auto now = store_.get_now(
      std::vector<std::string>{prefix_ + "version", prefix_ + "epoch", prefix_ + "state"});
  s.version = now[0] && !now[0]->empty() ? std::stoll(*now[0]) : 0;
  s.epoch = now[1] && !now[1]->empty() ? std::stoll(*now[1]) : 0;
  if (now[2]) {
    s.raw = *now[2];
    s.state = DynamicState::decode(s.raw);
  }
  return s;
}

bool GenericStateStore::write(const StateSnapshot& from, const std::string& to,
                              bool wakes_participants, const std::optional<Announcement>& on_loss) {
  if (store_.compare_set(prefix_ + "state", from.raw, to) != to) {
    if (on_loss) {
      std::string dir = announce_dir(prefix_, on_loss->round);
      int64_t slot = store_.add(dir + "n", 1);
      store_.set(dir + std::to_string(slot),
                 std::to_string(on_loss->local_world_size) + " " + on_loss->node);
    }
    return false;
  }
  int64_t v = store_.add(prefix_ + "version", 1);
  store_.set(prefix_ + "ver/" + std::to_string(v), "1");
  if (wakes_participants) {
    int64_t e = store_.add(prefix_ + "epoch", 1);
    store_.set(prefix_ + "epoch/" + std::to_string(e), "1");
  }
  return true;
}

Task<void> GenericStateStore::wait(const StateSnapshot& from, bool participant,
                                   std::chrono::milliseconds timeout, CancelSignal& cancel) {
  std::vector<std::string> key{prefix_ + (participant ? "epoch/" + std::to_string(from.epoch + 1)
                                                      : "ver/" + std::to_string(from.version + 1))};
  // Whether it came or the time passed, the caller decides again.
  co_await waits_.wait_for(std::move(key), timeout, cancel);
}

std::vector<std::pair<std::string, int>> GenericStateStore::announced(int round) {
  std::string dir = announce_dir(prefix_, round);
  int64_t last = store_.add(dir + "n", 0);
  std::vector<std::string> slots;
  for (int64_t i = 1; i <= last; ++i) {
    slots.push_back(dir + std::to_string(i));
  }
  std::vector<std::pair<std::string, int>> out;
  if (slots.empty()) return out;
  for (const auto& value : store_.get_now(slots)) {
    // "<local world size> <node>"; a slot whose value is not there yet is skipped.
    auto space = value ? value->find(' ') : std::string::npos;
    if (space == std::string::npos) continue;
    try {
      out.emplace_back(value->substr(space + 1), std::stoi(value->substr(0, space)));
    } catch (const std::exception&) {
      // not an announcement
    }
  }
  return out;
}

}  // namespace ddprun::rendezvous
