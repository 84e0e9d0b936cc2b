#pragma once

#include <string>

#include "tracking/run_store.h"

namespace ddprun::dashboard {

/// `ddprun runs report`: one self-contained HTML file (scripts, styles and data inside)
/// that draws the run exactly as the dashboard's run page does, offline.
std::string report_page(tracking::RunStore& store, const std::string& run_id);

}  // namespace ddprun::dashboard
