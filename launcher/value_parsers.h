#pragma once

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "agent/worker_spec.h"

// Parsers for the values of ddprun's flags. Each takes the flag's display form
// (e.g. "--nnodes" or "PET_NNODES") so its UsageError names where the value came from.
namespace ddprun::launcher {

/// A non-negative decimal integer that fits in int; throws UsageError otherwise.
int parse_int(const std::string& flag, const std::string& value);

/// A non-negative number of seconds (fractions allowed); `allow_zero` false rejects 0.
std::chrono::milliseconds parse_seconds(const std::string& flag, const std::string& value,
                                        bool allow_zero);

/// "N" or "MIN:MAX" with 0 < MIN <= MAX.
std::pair<int, int> parse_nnodes(const std::string& flag, const std::string& value);

/// "0".."3" or "local_rank:std,..." as for --redirects and --tee.
agent::StdSpec parse_std_spec(const std::string& flag, const std::string& value);

/// "key=value,key=value"; an empty string gives an empty map.
std::map<std::string, std::string> parse_key_values(const std::string& flag,
                                                    const std::string& value);

/// "0,1,3": comma-separated local ranks.
std::set<int> parse_rank_list(const std::string& flag, const std::string& value);

/// "1", "0", "true", "false" (any case) for boolean PET_* variables.
bool parse_bool(const std::string& flag, const std::string& value);

}  // namespace ddprun::launcher
