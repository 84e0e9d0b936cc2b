#pragma once

#include "agent/agent_config.h"
#include "launcher/option_values.h"

namespace ddprun::launcher {

/// Fills straggler detection's options (--straggler_threshold, --straggler_window,
/// --straggler_action) and goodput's --checkpoint_dir, which must name an existing
/// directory: a mistyped one would leave goodput silently wrong. Throws UsageError.
/// `check_dirs` is false where this process runs no workers (an ssh controller).
void fill_straggler_and_goodput_options(const Values& v, bool check_dirs, agent::AgentConfig& a);

}  // namespace ddprun::launcher
