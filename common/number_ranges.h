#pragma once

#include <string>
#include <vector>

namespace ddprun {

/// "0-3,5,7,8": numbers in ascending order, each run of three or more consecutive ones
/// as a range, so that a whole job's ranks or nodes stay short; a run of two is two
/// numbers, or a range with `pairs_as_ranges` (the kernel's CPU lists: "0-1").
std::string number_ranges(const std::vector<int>& ascending, bool pairs_as_ranges = false);

}  // namespace ddprun
