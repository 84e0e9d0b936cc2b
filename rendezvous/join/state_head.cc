#include <charconv>
#include <cstdint>

#include "rendezvous/join/state_store.h"

namespace ddprun::rendezvous {

// "<round>.<version>.<epoch>.<revision>.<last call deadline>" of a head.
std::string hint_of(const std::optional<StateHead>& head) {
  if (!head) return "";
  return std::to_string(head->round) + "." + std::to_string(head->version) + "." +
         std::to_string(head->epoch) + "." + std::to_string(head->revision) + "." +
         std::to_string(head->last_call_deadline_ms);
}

// The head a hint says; nothing where it says none.
std::optional<StateHead> head_from_hint(const std::string& hint) {
  int64_t n[5] = {};
  const char* at = hint.data();
  const char* end = hint.data() + hint.size();
  for (int i = 0; i < 5; ++i) {
    auto [next, ec] = std::from_chars(at, end, n[i]);
    bool last = i == 4;
    if (ec != std::errc() || n[i] < 0 || (last ? next != end : next == end || *next != '.')) {
      return std::nullopt;  // not a hint: the head is read
    }
    at = next + 1;
  }
  if (n[0] > INT32_MAX) return std::nullopt;
  StateHead h;
  h.exists = true;  // a forming round, as its start wrote it
  h.round = static_cast<int>(n[0]);
  h.version = n[1];
  h.epoch = n[2];
  h.revision = n[3];
  h.last_call_deadline_ms = n[4];
  return h;
}

}  // namespace ddprun::rendezvous
