#pragma once

#include <string>

#include "tracking/run_store.h"

namespace ddprun::tracking {

/// One self-contained HTML page for a run: every metric per rank, the system metrics
/// and the restart timeline drawn on canvases by inline script, with the data embedded
/// (viewable offline, no external resource). Throws TrackingError.
std::string html_report(RunStore& store, const std::string& run_id);

}  // namespace ddprun::tracking
