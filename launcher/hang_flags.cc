#include "launcher/hang_flags.h"

#include "common/error.h"
#include "common/value_parsers.h"

namespace ddprun::launcher {

void fill_hang_options(const Values& v, agent::HangOptions& hang) {
  using Mode = agent::HangOptions::Mode;
  const std::string& timeout = v.str("hang_timeout");
  if (timeout == "off" || timeout.empty()) {
    hang.mode = Mode::kOff;
  } else if (timeout == "auto") {
    hang.mode = Mode::kAuto;
  } else {
    hang.mode = Mode::kFixed;
    try {
      hang.timeout = parse_seconds(v.source("hang_timeout"), timeout, false);
    } catch (const UsageError&) {
      fail_value(v.source("hang_timeout"), timeout,
                 "expected off, auto or a number of seconds > 0");
    }
  }
  hang.initial_timeout =
      parse_seconds(v.source("hang_initial_timeout"), v.str("hang_initial_timeout"), false);
  hang.min_timeout = parse_seconds(v.source("hang_min_timeout"), v.str("hang_min_timeout"), false);
  // A factor reads like seconds (a positive number); below 1 it would flag normal steps.
  auto factor = parse_seconds(v.source("hang_safety_factor"), v.str("hang_safety_factor"), false);
  hang.factor = static_cast<double>(factor.count()) / 1000;
  if (hang.factor < 1) {
    fail_value(v.source("hang_safety_factor"), v.str("hang_safety_factor"),
               "expected a number >= 1");
  }
  hang.straggler_warning =
      parse_seconds(v.source("straggler_warning"), v.str("straggler_warning"), true);
  hang.max_no_progress_restarts = v.integer("max_no_progress_restarts");
  if (hang.max_no_progress_restarts < 1) {
    fail_value(v.source("max_no_progress_restarts"), v.str("max_no_progress_restarts"),
               "expected an integer >= 1");
  }
}

}  // namespace ddprun::launcher
