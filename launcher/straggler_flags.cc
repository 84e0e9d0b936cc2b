#include "launcher/straggler_flags.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "common/error.h"
#include "common/value_parsers.h"

namespace ddprun::launcher {

namespace {

// A judgement compares two windows of steps: one longer than this judges too rarely
// to name a straggler while it still costs the job.
constexpr std::chrono::hours kLongestWindow{1};

void check_checkpoint_dir(const std::string& flag, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status status = fs::status(dir, ec);
  if (!fs::exists(status)) {
    throw UsageError(flag + "=" + dir +
                     ": does not exist; create it before the job (goodput reads the newest "
                     "checkpoint there)");
  }
  if (!fs::is_directory(status)) {
    throw UsageError(flag + "=" + dir + ": is not a directory");
  }
}

}  // namespace

void fill_straggler_and_goodput_options(const Values& v, bool check_dirs, agent::AgentConfig& a) {
  {
    const std::string& text = v.str("straggler_threshold");
    char* end = nullptr;
    double ratio = text.empty() ? NAN : std::strtod(text.c_str(), &end);
    bool number = !text.empty() && end == text.c_str() + text.size() && std::isfinite(ratio);
    a.stragglers.threshold = number ? ratio : -1;
  }
  if (a.stragglers.threshold != 0 &&
      !(a.stragglers.threshold > 1 && a.stragglers.threshold < 1e6)) {
    throw UsageError(v.source("straggler_threshold") + "=" + v.str("straggler_threshold") +
                     ": expected a ratio above 1 (1.3: 30% more own work per step than the "
                     "median), or 0 for off");
  }
  a.stragglers.window =
      parse_seconds(v.source("straggler_window"), v.str("straggler_window"), false);
  if (a.stragglers.window > kLongestWindow) {
    throw UsageError(v.source("straggler_window") + "=" + v.str("straggler_window") +
                     ": expected at most 3600 seconds (a judgement compares two windows in "
                     "a row)");
  }
  const std::string& action = v.str("straggler_action");
  if (action != "warn" && action != "exclude") {
    throw UsageError(v.source("straggler_action") + "=" + action + ": expected warn or exclude");
  }
  a.stragglers.exclude = action == "exclude";
  if (v.given("checkpoint_dir")) {
    a.checkpoint_dir = v.str("checkpoint_dir");
    if (a.checkpoint_dir.empty()) {
      throw UsageError(v.source("checkpoint_dir") + "=: must name a directory");
    }
    if (check_dirs) check_checkpoint_dir(v.source("checkpoint_dir"), a.checkpoint_dir);
  }
}

}  // namespace ddprun::launcher
