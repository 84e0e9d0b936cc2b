#include "rendezvous/round/watched_members.h"

namespace ddprun::rendezvous {

std::vector<std::string> watched_members(const std::vector<std::string>& members, int self) {
  int n = static_cast<int>(members.size());
  std::vector<std::string> out;
  if (self < 0 || self >= n) return out;
  if (self == 0) {
    out.assign(members.begin() + 1, members.end());
    return out;
  }
  out.push_back(members[0]);
  int next = self + 1 < n ? self + 1 : 1;  // the ring of ranks 1..n-1
  if (next != self) out.push_back(members[static_cast<size_t>(next)]);
  return out;
}

}  // namespace ddprun::rendezvous
