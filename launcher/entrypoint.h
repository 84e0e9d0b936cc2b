#pragma once

#include "launcher/launch_config.h"

namespace ddprun::launcher {

/// Fills config.agent.spec.argv with the command each worker runs:
/// `$PYTHON_EXEC|python3 -u [-m] script args` or the program itself (--no_python).
/// Checks up front that it can run: throws agent::ExecError (exit 127 when the
/// script, program or interpreter is missing, 126 when it cannot be executed).
void resolve_entrypoint(LaunchConfig& config, const EnvLookup& env);

}  // namespace ddprun::launcher
