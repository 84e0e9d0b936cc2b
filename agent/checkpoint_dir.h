#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ddprun::agent {

/// When the newest checkpoint in `dir` was completed, for goodput accounting without a
/// call in the program (--checkpoint_dir): the last modification of the newest file
/// under it (three levels deep at most), in us since the epoch. Files still being
/// written by the usual conventions (*.tmp, *.partial, *.incomplete, *~) do not count.
/// nullopt where there is none or the directory cannot be read. Looks at 10,000 entries
/// at most.
std::optional<int64_t> newest_checkpoint_us(const std::string& dir);

}  // namespace ddprun::agent
