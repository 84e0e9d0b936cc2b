#pragma once

#include <sys/types.h>

namespace ddprun::test {

/// True once every thread of `pid` is stopped (SIGSTOP took effect: a signal is only
/// pending until each thread is scheduled to take it).
bool process_stopped(pid_t pid);

}  // namespace ddprun::test
