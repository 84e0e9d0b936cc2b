#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

// Parsers for flag values that more than one module reads (the launcher's flags, the
// rendezvous' --rdzv_conf). Each takes the flag's display form (e.g. "--nnodes" or
// "PET_NNODES") so its UsageError names where the value came from.
namespace ddprun {

/// A non-negative decimal integer that fits in int; throws UsageError otherwise.
int parse_int(const std::string& flag, const std::string& value);

/// A non-negative number of seconds (fractions allowed); `allow_zero` false rejects 0.
std::chrono::milliseconds parse_seconds(const std::string& flag, const std::string& value,
                                        bool allow_zero);

/// "N" or "MIN:MAX" with 0 < MIN <= MAX.
std::pair<int, int> parse_nnodes(const std::string& flag, const std::string& value);

/// "key=value,key=value"; an empty string gives an empty map.
std::map<std::string, std::string> parse_key_values(const std::string& flag,
                                                    const std::string& value);

/// "1", "0", "true", "false" (any case) for boolean values.
bool parse_bool(const std::string& flag, const std::string& value);

/// Throws UsageError "<flag>=<value>: <why>".
[[noreturn]] void fail_value(const std::string& flag, const std::string& value,
                             const std::string& why);
/// `s` cut at every `sep` (an empty string gives one empty part).
std::vector<std::string> split_text(const std::string& s, char sep);
/// `s` without leading and trailing blanks and tabs.
std::string trim_text(const std::string& s);
/// The whole of `s` as a decimal int; false if it is not one.
bool to_int(const std::string& s, int& out);
bool to_int64(const std::string& s, int64_t& out);

}  // namespace ddprun
