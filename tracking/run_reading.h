#pragma once

#include <string>

#include "tracking/run_store.h"

namespace ddprun::tracking {

// What every reader of a run (`ddprun runs`, the dashboard, `runs merge`) does first.
// A single node's launcher writes run.db lazily (RunTracker): the empty run on its
// stream thread's first pass, its records into it only once the job has run a moment
// or its workers record. What it left undone when it ended is done here, once it is
// gone; while it lives it does it itself.

/// Whether `run_dir` holds a run to read: run.db, or a run whose launcher died before
/// it wrote even the empty run (`streams/` made, nobody holding the directory), for
/// which the empty run is made here: an undescribed run, which reads as crashed. One
/// whose launcher is making it right now is not a run yet. Never throws.
bool run_exists(const std::string& run_dir);

/// Folds into run.db what the run directory's files hold beyond it (the launcher's
/// records and the workers' streams; see StreamIngester::Dir::kRun), once the run's
/// launcher is gone: a job shorter than its launcher's first look at run.db leaves its
/// own records in launcher.jsonl. Nothing is done while the launcher lives or when the
/// run holds them all; a reader that cannot write the run reads it as it is. `reading`
/// is the reader's own connection, which sees the folded records at its next query.
/// Never throws.
void settle_run(RunStore& reading);

}  // namespace ddprun::tracking
