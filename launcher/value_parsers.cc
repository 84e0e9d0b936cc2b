#include "launcher/value_parsers.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <vector>

#include "common/error.h"

namespace ddprun::launcher {
namespace {

agent::Std parse_std_digit(const std::string& flag, const std::string& whole,
                           const std::string& digit) {
  int v = -1;
  if (!to_int(digit, v) || v < 0 || v > 3) {
    fail_value(flag, whole,
               "expected 0 (none), 1 (stdout), 2 (stderr), 3 (both) or a map like 0:1,1:2");
  }
  return static_cast<agent::Std>(v);
}

}  // namespace

agent::StdSpec parse_std_spec(const std::string& flag, const std::string& value) {
  agent::StdSpec spec;
  std::string v = trim_text(value);
  if (v.find(':') == std::string::npos) {
    spec.all = parse_std_digit(flag, value, v);
    return spec;
  }
  for (const auto& item : split_text(v, ',')) {
    auto kv = split_text(item, ':');
    int rank = -1;
    if (kv.size() != 2 || !to_int(trim_text(kv[0]), rank) || rank < 0) {
      fail_value(flag, value, "map entries must be local_rank:std, e.g. 0:1,1:2");
    }
    spec.per_rank[rank] = parse_std_digit(flag, value, trim_text(kv[1]));
  }
  return spec;
}

std::set<int> parse_rank_list(const std::string& flag, const std::string& value) {
  std::set<int> ranks;
  if (trim_text(value).empty()) return ranks;
  for (const auto& item : split_text(value, ',')) {
    int r = -1;
    if (!to_int(trim_text(item), r) || r < 0) {
      fail_value(flag, value, "expected comma-separated local ranks, e.g. 0,1");
    }
    ranks.insert(r);
  }
  return ranks;
}

}  // namespace ddprun::launcher
