#pragma once

#include "agent/hang/hang_options.h"
#include "launcher/option_values.h"

namespace ddprun::launcher {

/// Fills hang detection's options from --hang_timeout (off, SECONDS or auto),
/// --hang_initial_timeout, --hang_safety_factor, --hang_min_timeout and
/// --max_no_progress_restarts (or their PET_ variables). Throws UsageError.
void fill_hang_options(const Values& v, agent::HangOptions& hang);

}  // namespace ddprun::launcher
