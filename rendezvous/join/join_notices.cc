#include "rendezvous/join/join_notices.h"

#include <spdlog/spdlog.h>

#include "common/error.h"
#include "common/node_names.h"
#include "rendezvous/rendezvous_errors.h"

namespace ddprun::rendezvous {

// Other nodes kept out (quarantined) while this one joins, each said once on the
// console with why: a node that failed its preflight before it ever joined is named
// here first.
void JoinNotices::kept_out(const std::map<std::string, Quarantine>& quarantined,
                           const std::string& self) {
  int64_t now = wall_ms_();
  std::string own = node_address(self);
  std::vector<std::string> known{self};
  for (const auto& [id, q] : quarantined) known.push_back(id);
  for (const auto& [address, q] : quarantined) {
    if (q.until_ms <= now || address == own || address == self) continue;
    auto [it, added] = said_out_.try_emplace(address, q.until_ms);
    if (!added && it->second == q.until_ms) continue;
    it->second = q.until_ms;
    spdlog::warn("node {} is kept out of the job for {} s: {}", node_name(address, known),
                 (q.until_ms - now + 999) / 1000, q.reason);
  }
}

// Says why this node waits, once each time that changes: kept out (its quarantine; the
// join's deadline starts again, as it is kept out on purpose), or a spare.
bool JoinNotices::waiting(const DynamicState& state, const std::string& node, bool spare,
                          const Action& a) {
  bool kept_out = false;
  if (a.kind == Action::Kind::kWait && !state.participants.count(node)) {
    if (const Quarantine* q = quarantine_of(state, node, wall_ms_())) {
      if (q->until_ms != quarantined_until_) {
        spdlog::warn("this node is quarantined for {} s ({}); it waits to join again",
                     (q->until_ms - wall_ms_() + 999) / 1000, q->reason);
      }
      quarantined_until_ = q->until_ms;
      kept_out = true;
    }
  }
  if (spare && !spare_) {
    if (back_from_quarantine(state, node, wall_ms_())) {
      spdlog::warn(
          "waiting as a spare: this node is back from quarantine; it takes a place "
          "when round {} ends for another reason, not forcing a restart",
          state.round);
    } else {
      spdlog::warn(
          "waiting as a spare: round {} runs with its maximum of {} node(s); this "
          "node takes the place of the first that fails or leaves",
          state.round, config_.max_nodes);
    }
  }
  spare_ = spare;
  return kept_out;
}

// The job ended before this node got a place: it no longer waits as a spare; why, as
// what it throws.
void JoinNotices::closed(const DynamicState& state, const std::string& node, bool spare) {
  spare_ = false;
  if (spare) {
    throw SpareNotNeeded(state.failed ? "the job failed without needing this spare node"
                                      : "the job finished without needing this spare node",
                         state.failed);
  }
  if (const Quarantine* q = quarantine_of(state, node, wall_ms_())) {
    throw RendezvousClosedError("the job ended while this node was quarantined (" + q->reason +
                                ")");
  }
  throw RendezvousClosedError(state.failed ? "the run has already ended (it failed)"
                                           : "the run has already finished");
}

// The join's deadline passed: how many joined, what was needed, who is kept out.
void JoinNotices::timed_out(const DynamicState& state) const {
  std::string out;
  int64_t wall = wall_ms_();
  for (const auto& [address, q] : state.quarantined) {
    if (q.until_ms <= wall) continue;
    out += (out.empty() ? "; quarantined: " : ", ") + address + " for " +
           std::to_string((q.until_ms - wall + 999) / 1000) + " s more (" + q.reason + ")";
  }
  std::string why = std::to_string(state.participants.size()) + " node(s) joined";
  std::string needed = "at least " + std::to_string(config_.min_nodes) + " needed";
  if (static_cast<int>(state.participants.size()) >= config_.min_nodes &&
      state.last_call_deadline_ms > wall) {
    // Enough nodes, still calling for more: the last call outlasted the join timeout.
    why += " (" + needed + "), still in the last call for more (";
    why += std::to_string((state.last_call_deadline_ms - wall + 999) / 1000);
    why +=
        " s more, --rdzv_conf last_call_timeout): give a join_timeout longer than the "
        "last call";
  } else {
    why += ", " + needed;
  }
  throw TimeoutError(why + out);
}

}  // namespace ddprun::rendezvous
