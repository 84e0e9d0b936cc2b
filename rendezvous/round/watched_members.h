#pragma once

#include <string>
#include <vector>

namespace ddprun::rendezvous {

/// The members whose liveness the node of group rank `self` checks each heartbeat
/// interval (`members` by group rank): group rank 0 checks every other member, each
/// other node checks group rank 0 and the next group rank (after the last, group rank
/// 1). Every member is checked by group rank 0 and by another, and group rank 0 by
/// everyone, so a round's
/// reads grow as about 3N per interval instead of N x N (every node reading every
/// member). The node that notices a death ends the round for all; where group rank 0
/// dies together with others, those others are left for the next round's last call.
std::vector<std::string> watched_members(const std::vector<std::string>& members, int self);

}  // namespace ddprun::rendezvous
