#pragma once

#include <sys/types.h>

#include <string>

namespace ddprun::os {

/// True when process `pid` has a handler installed for `sig` (SigCgt in
/// /proc/<pid>/status): sending it then runs the handler instead of the default action.
bool catches_signal(pid_t pid, int sig);

/// The process' command name (/proc/<pid>/comm, at most 15 characters; "" when gone).
std::string process_name(pid_t pid);

/// Where the kernel has `pid` waiting (/proc/<pid>/wchan; "" when unknown).
std::string wait_channel(pid_t pid);

}  // namespace ddprun::os
