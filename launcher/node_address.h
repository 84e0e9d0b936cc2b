#pragma once

#include <functional>
#include <optional>
#include <string>

#include "launcher/launch_config.h"

namespace ddprun::launcher {

/// Where a node's address was found when its name does not resolve.
struct NodeAddress {
  std::string address;
  std::string how;  // "SLURM_NODE_ALIASES", "scontrol's NodeAddr", ...
};

/// Finds the address of a cluster node: nullopt when the name resolves as it is (the
/// name is then the address to use); else the address from another source; throws
/// Error when none knows it. Injectable so tests need no DNS and no Slurm.
using NodeAddressLookup = std::function<std::optional<NodeAddress>(const std::string& name)>;

/// The real lookup: the resolver (getaddrinfo), else Slurm's SLURM_NODE_ALIASES
/// (`name:addr:host,...`), else `scontrol show node NAME` (its NodeAddr).
NodeAddressLookup slurm_node_address_lookup(const EnvLookup& env);

/// "name:addr:host,..." -> addr of `name` (IPv6 addresses in brackets); nullopt if absent.
std::optional<std::string> node_alias_address(const std::string& aliases, const std::string& name);

/// `scontrol show node -o` output -> the value of NodeAddr; nullopt if absent.
std::optional<std::string> scontrol_node_addr(const std::string& output);

}  // namespace ddprun::launcher
