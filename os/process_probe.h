#pragma once

#include <sys/types.h>

#include <string>

namespace ddprun::os {

/// True when process `pid` has a handler installed for `sig` (SigCgt in
/// /proc/<pid>/status): sending it then runs the handler instead of the default action.
bool catches_signal(pid_t pid, int sig);

/// Where the kernel has `pid` waiting (/proc/<pid>/wchan; "" when unknown).
std::string wait_channel(pid_t pid);

}  // namespace ddprun::os
