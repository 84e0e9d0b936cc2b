#pragma once

#include <optional>
#include <string>

#include "agent/preflight/preflight_options.h"
#include "launcher/option_values.h"

namespace ddprun::launcher {

/// Fills the preflight's options from --preflight (all, none or a list of checks),
/// --health_check and --health_check_timeout (or their PET_ variables), for a node of
/// `local_workers` workers that may use the GPUs `cuda_visible_devices` names (unset:
/// all). The directories the job writes are the launcher's to add. Throws UsageError
/// naming the flag.
void fill_preflight_options(const Values& v, int local_workers,
                            const std::optional<std::string>& cuda_visible_devices,
                            agent::PreflightOptions& p);

}  // namespace ddprun::launcher
