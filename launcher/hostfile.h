#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ddprun::launcher {

/// One host of a job started over ssh, and what runs there.
struct HostSlots {
  std::string name;
  int slots = 0;  // 0: not given (--nproc_per_node decides)
  /// The slot (GPU) indices to use when --include/--exclude picked some: they become the
  /// host's CUDA_VISIBLE_DEVICES and its number of workers. Empty: all `slots`.
  std::vector<int> picked;
};

/// Parses a hostfile: one host per line, `host` or `host slots=N` (DeepSpeed's and MPI's
/// form), `#` comments and blank lines. Throws UsageError naming the file and line.
std::vector<HostSlots> parse_hostfile(const std::string& path, const std::string& text);

/// Parses --hosts "a,b:4,c" (`:N` gives the slots).
std::vector<HostSlots> parse_host_list(const std::string& flag, const std::string& value);

/// Applies DeepSpeed's --include / --exclude ("host1@host2:0,2": hosts separated by `@`,
/// optional slot indices after `:`). Include keeps only what it names; exclude drops a
/// whole host or the named slots. Slot indices need the host's slots to be known.
/// Throws UsageError naming the flag for an unknown host or slot, or an empty result.
std::vector<HostSlots> filter_hosts(std::vector<HostSlots> hosts, const std::string& include,
                                    const std::string& exclude);

}  // namespace ddprun::launcher
