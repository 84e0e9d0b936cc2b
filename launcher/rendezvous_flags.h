#pragma once

#include "agent/agent_config.h"
#include "launcher/option_values.h"

namespace ddprun::launcher {

/// Fills the rendezvous part of `config` from --nnodes, --rdzv_*, --standalone,
/// --node_rank, --master_*, --local_addr: validated, with torchrun's defaults (the
/// c10d endpoint's port 29400, the rdzv_conf timeouts). Throws UsageError.
void fill_rendezvous(const Values& v, agent::AgentConfig& config);

}  // namespace ddprun::launcher
