#pragma once

#include "launcher/launch_config.h"
#include "launcher/option_values.h"

namespace ddprun::launcher {

/// Fills the rendezvous part of `config` from --nnodes, --rdzv_*, --standalone,
/// --node_rank, --master_*, --local_addr through rendezvous::parse_rendezvous(), and
/// gives the agent the bounds and the run id. Throws UsageError.
void fill_rendezvous(const Values& v, LaunchConfig& config);

}  // namespace ddprun::launcher
