#pragma once

#include "launcher/launch_config.h"
#include "launcher/option_values.h"

namespace ddprun::launcher {

/// Fills the rendezvous part of `config` from --nnodes, --rdzv_*, --standalone,
/// --node_rank, --master_*, --local_addr through rendezvous::parse_rendezvous(), and
/// gives the agent the bounds and the run id. Throws UsageError.
/// The job token comes from rdzv_conf's token_file, else DDPRUN_JOB_TOKEN, else (with
/// `token_by_munge`: a Slurm step) MUNGE, once the launch gets that far.
void fill_rendezvous(const Values& v, const EnvLookup& env, LaunchConfig& config,
                     bool token_by_munge = false);

}  // namespace ddprun::launcher
