#pragma once

#include <string>

namespace ddprun::launcher {

/// `ddprun runs --help`: every verb, a line each.
const char* runs_usage();

/// `ddprun runs VERB --help`: that verb's own help; nullptr for no verb of runs.
const char* verb_help(const std::string& verb);

}  // namespace ddprun::launcher
