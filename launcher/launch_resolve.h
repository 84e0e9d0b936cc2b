#pragma once

#include <string>
#include <vector>

#include "launcher/launch_config.h"

namespace ddprun::launcher {

/// Completes a parsed LaunchConfig with what only this machine and this moment can
/// tell, in one step before anything starts: the entry point (a Python script or a
/// program, found), the job token (Slurm's MUNGE credential), a standalone job's run
/// id, --numa_binding's plan for each local rank, torchrun's worker watchdog file, and
/// the Python files workers import. From then on the launch only reads `config`.
/// Notices for the console are appended to `notices`. Throws UsageError, ExecError
/// (the entry point), or the errors of the token's settling.
void resolve_launch(LaunchConfig& config, const EnvLookup& env, std::vector<std::string>& notices);

}  // namespace ddprun::launcher
