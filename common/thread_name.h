#pragma once

#include <pthread.h>

namespace ddprun {

/// Names the calling thread (at most 15 characters), as `top -H`, `ps -L` and
/// profilers show it.
inline void name_this_thread(const char* name) { pthread_setname_np(pthread_self(), name); }

}  // namespace ddprun
