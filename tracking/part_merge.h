#pragma once

#include <optional>
#include <string>

#include "tracking/record_lines.h"

namespace ddprun::tracking {

struct MergeResult {
  std::string run_id;
  std::string run_dir;
  IngestStats stats;
};

/// Folds a forwarding agent's local copy (`<run dir>/parts/<agent>/`, left behind
/// when the primary was unreachable) into its run: into `<tracking_dir>/<run id>`, or
/// when no tracking_dir is given the run the part sits in. Only what the run does not
/// hold yet is added, so merging twice, or after a partial forward, adds nothing
/// twice. Throws TrackingError naming what is missing.
MergeResult merge_part(const std::string& part_dir, const std::optional<std::string>& tracking_dir);

/// Recovers a run whose primary agent died: folds in what its own workers' streams
/// and every part under `<run dir>/parts/` hold that run.db does not. Refuses a run
/// that is still running. Throws TrackingError.
MergeResult recover_run(const std::string& run_dir);

}  // namespace ddprun::tracking
