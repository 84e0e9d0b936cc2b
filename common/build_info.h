#pragma once

#include <string_view>

namespace ddprun {

/// What `ddprun --version` says of the binary: the commit it was built from (with
/// "-dirty" when the tree had changes; "unknown" outside a git checkout) and whether it
/// is the portable build (everything but glibc linked in).
std::string_view build_commit();
bool portable_build();

}  // namespace ddprun
