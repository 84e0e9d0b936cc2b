#pragma once

#include <string>
#include <vector>

namespace ddprun {

/// Expands a Slurm host list: `n[01-04,07]`, `a1,b[2-3],c`, `r[1-2]-n[1-2]` (several
/// bracket groups, the last varying fastest), zero padding kept (`01-04` gives `01`
/// ... `04`). Names may hold letters, digits, `-`, `_` and `.`. Throws UsageError
/// naming `source` (the variable or flag it came from) and what is wrong for a
/// malformed list or one of more than kMaxHosts names.
std::vector<std::string> expand_host_list(const std::string& source, const std::string& list);

/// The most names expand_host_list() gives (a larger range is a mistake, not a cluster).
inline constexpr size_t kMaxHosts = 100'000;

}  // namespace ddprun
