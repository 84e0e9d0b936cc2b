#pragma once

#include <string>

namespace ddprun {

/// A random (version 4) UUID, "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx", from the kernel's
/// random source in one system call. Throws SystemError if the kernel gives none.
std::string random_uuid();

}  // namespace ddprun
