#pragma once

#include <cstddef>

namespace ddprun {

/// Writes all of `size` bytes, retrying short writes and EINTR; false on error (errno
/// says which).
bool write_fully(int fd, const char* data, size_t size);

}  // namespace ddprun
