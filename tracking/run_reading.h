#pragma once

#include <string>

#include "tracking/run_store.h"

namespace ddprun::tracking {

// What every reader of a run (`ddprun runs`, the dashboard) asks before it reads.
// Readers only read: a job leaves a complete run.db when its launcher ends; what a
// killed launcher left unfolded is folded by `ddprun runs repair` (recover_run).

/// Whether `run_dir` holds a run to read: run.db, or a run whose launcher died before
/// it wrote even the empty run (`streams/` made, nobody holding the directory), which
/// reads as crashed. One whose launcher is making it right now is not a run yet.
/// Never writes, never throws.
bool run_exists(const std::string& run_dir);

/// Whether the run's directory holds records its run.db lacks, left by a launcher that
/// was killed (its own records' file beyond what run.db took, or no run.db at all):
/// `ddprun runs repair` folds them in. False while the launcher lives. Never writes,
/// never throws.
bool needs_repair(const std::string& run_dir);
/// The same for a run already open for reading (no second connection).
bool needs_repair(RunStore& reading);

}  // namespace ddprun::tracking
