#pragma once

#include <span>
#include <string>
#include <utility>

#include "launcher/launch_config.h"
#include "launcher/node_address.h"
#include "launcher/option_values.h"

namespace ddprun::launcher {

/// Parses `ddprun [options] script [script args...]` the way torchrun does: both
/// `--a_b` and `--a-b` spellings, `PET_<NAME>` environment defaults, everything after
/// the script belongs to the script. Throws UsageError naming the flag and value.
/// With --help or --version set in the result, nothing else is validated. Under Slurm
/// (launcher/slurm_flags.h) the step fills in the rendezvous flags not given;
/// `node_address` finds a node's address (default: slurm_node_address_lookup(env)).
LaunchConfig parse_command_line(int argc, const char* const argv[], const EnvLookup& env,
                                const DeviceCounter& devices,
                                const NodeAddressLookup& node_address = {});

/// The text printed for --help.
std::string help_text();

/// Every flag ddprun takes, torchrun's first: what parses them, prints --help and
/// generates shell completion.
std::span<const OptionDef> option_table();

/// ddprun's exit statuses and what each means: --help's list, the manual's.
std::span<const std::pair<const char*, const char*>> exit_statuses();

}  // namespace ddprun::launcher
