#pragma once

#include "agent/agent_config.h"
#include "launcher/option_values.h"

namespace ddprun::launcher {

/// Fills the metrics endpoint's options from --metrics_port, --metrics_host and
/// --metrics_sd_file. A flag that needs --metrics_port without it, or a discovery file
/// this node cannot write, throws UsageError: the job would run unseen.
void fill_metrics_options(const Values& v, agent::AgentConfig::Metrics& m);

}  // namespace ddprun::launcher
