#pragma once

#include <dlfcn.h>

namespace ddprun::os {

/// The function `name` of a library loaded with dlopen, as type F (null if missing).
template <typename F>
F library_function(void* lib, const char* name) {
  return reinterpret_cast<F>(::dlsym(lib, name));
}

}  // namespace ddprun::os
