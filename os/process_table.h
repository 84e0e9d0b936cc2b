#pragma once

#include <sys/types.h>

#include <vector>

namespace ddprun::os {

/// Processes whose session id is `sid`, read from /proc (empty if /proc is missing).
std::vector<pid_t> session_members(pid_t sid);

/// Live (non-zombie) direct children of `parent`, read from /proc.
std::vector<pid_t> children_of(pid_t parent);

/// SIGKILLs every process of the given sessions, repeating while new ones appear
/// (a dying process may still fork). Bounded: gives up after a few rounds.
void kill_sessions(const std::vector<pid_t>& sids);

}  // namespace ddprun::os
