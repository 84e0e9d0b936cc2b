#pragma once

#include <set>
#include <string>
#include <vector>

#include "agent/worker_spec.h"
#include "common/value_parsers.h"

// Parsers for the values of the launcher's own flags (the generic ones are in
// common/value_parsers.h). Each takes the flag's display form so its UsageError
// names where the value came from.
namespace ddprun::launcher {

/// "0".."3" or "local_rank:std,..." as for --redirects and --tee.
agent::StdSpec parse_std_spec(const std::string& flag, const std::string& value);

/// "SIGTERM,SIGINT" (the SIG prefix optional, any case; "" for none): signals ddprun may
/// catch. Throws UsageError naming the unknown ones and the valid names.
std::vector<int> parse_signal_list(const std::string& flag, const std::string& value);

/// "0,1,3": comma-separated local ranks.
std::set<int> parse_rank_list(const std::string& flag, const std::string& value);

/// "apple,orange" as torchrun 2.14's --duplicate_*_filters: comma-separated strings, ",,"
/// for a comma within one; empty strings are dropped ("" gives none).
std::vector<std::string> parse_filter_list(const std::string& value);

}  // namespace ddprun::launcher
