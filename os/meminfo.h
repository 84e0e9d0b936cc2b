#pragma once

#include <cstdint>
#include <optional>

namespace ddprun::os {

/// The machine's memory, from /proc/meminfo, in bytes.
struct MemInfo {
  uint64_t total = 0;
  uint64_t available = 0;  // MemAvailable: what can be had without swapping
};

/// nullopt when /proc/meminfo cannot be read or lacks the fields. One read, no streams.
std::optional<MemInfo> read_meminfo();

}  // namespace ddprun::os
