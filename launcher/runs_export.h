#pragma once

#include <string>

#include "tracking/run_store.h"

namespace ddprun::launcher {

/// `ddprun runs export RUN`: the run's metric points, then its config and summary
/// entries, as jsonl or csv (to standard output, or to the file `output` names), or as
/// TensorBoard event files under the directory `output` names (default <id>-tfevents).
/// Returns the exit code; an unwritable output is said on standard error.
int export_run(tracking::RunStore& s, const std::string& id, const std::string& format,
               const std::string& output);

}  // namespace ddprun::launcher
