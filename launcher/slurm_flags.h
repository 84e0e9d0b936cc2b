#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/node_address.h"
#include "launcher/option_values.h"
#include "launcher/slurm_step.h"

namespace ddprun::launcher {

/// What the Slurm step decides beyond the flags' values.
struct SlurmDefaults {
  std::optional<bool> c10d_is_host;  // the first node hosts a c10d store it derived
  std::string port_hint;             // what to do when the derived port is taken
  // The nodes may agree on a job token through MUNGE (launcher/slurm_token.h): a
  // multi-node step whose store's host ddprun knows (node 0's, or the c10d endpoint
  // it derived).
  bool token_by_munge = false;
};

/// Fills in the rendezvous options the user did not give (flag or PET_ variable) from
/// the Slurm step: --nnodes, --node_rank, --master_addr (the first node), --master_port
/// or the c10d endpoint (slurm_port()), --rdzv_id (JOB.STEP, or JOB when elastic).
/// Explicit values win; one that contradicts the step adds a line to `notices`, as does
/// a node address found other than by its name. Throws UsageError for a step ddprun
/// cannot serve: more than one task per node, or a batch script of several nodes.
SlurmDefaults apply_slurm(Values& values, const SlurmStep& step, const NodeAddressLookup& lookup,
                          std::vector<std::string>& notices);

}  // namespace ddprun::launcher
