#pragma once

#include <string_view>

namespace ddprun::os {

/// Whether a kernel release string ("6.1.0-28-amd64", "5.15.0", "4.18.0-513.el8")
/// names version `major`.`minor` or later. False where it does not start with two
/// numbers.
bool release_at_least(std::string_view release, int major, int minor);

/// Whether the running kernel (uname) is `major`.`minor` or later.
bool kernel_at_least(int major, int minor);

}  // namespace ddprun::os
