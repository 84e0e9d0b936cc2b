#include "launcher/value_parsers.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <vector>

#include "common/error.h"

namespace ddprun::launcher {
namespace {

[[noreturn]] void fail(const std::string& flag, const std::string& value, const std::string& why) {
  throw UsageError(flag + "=" + value + ": " + why);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    parts.push_back(s.substr(start, pos - start));
    if (pos == std::string::npos) return parts;
    start = pos + 1;
  }
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

bool to_int(const std::string& s, int& out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

agent::Std parse_std_digit(const std::string& flag, const std::string& whole,
                           const std::string& digit) {
  int v = -1;
  if (!to_int(digit, v) || v < 0 || v > 3) {
    fail(flag, whole, "expected 0 (none), 1 (stdout), 2 (stderr), 3 (both) or a map like 0:1,1:2");
  }
  return static_cast<agent::Std>(v);
}

}  // namespace

int parse_int(const std::string& flag, const std::string& value) {
  int v = 0;
  if (!to_int(trim(value), v) || v < 0) fail(flag, value, "expected a non-negative integer");
  return v;
}

std::chrono::milliseconds parse_seconds(const std::string& flag, const std::string& value,
                                        bool allow_zero) {
  std::string s = trim(value);
  char* end = nullptr;
  double v = s.empty() ? NAN : std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v) || v < 0 ||
      (!allow_zero && v == 0) || v > 1e9) {
    fail(flag, value,
         allow_zero ? "expected a number of seconds >= 0" : "expected a number of seconds > 0");
  }
  return std::chrono::milliseconds(static_cast<long long>(std::llround(v * 1000)));
}

std::pair<int, int> parse_nnodes(const std::string& flag, const std::string& value) {
  auto parts = split(value, ':');
  int lo = 0;
  int hi = 0;
  bool ok = false;
  if (parts.size() == 1) {
    ok = to_int(parts[0], lo);
    hi = lo;
  } else if (parts.size() == 2) {
    ok = to_int(parts[0], lo) && to_int(parts[1], hi);
  }
  if (!ok) fail(flag, value, "expected N or MIN:MAX");
  if (lo < 1 || hi < 1) fail(flag, value, "the number of nodes must be at least 1");
  if (lo > hi) fail(flag, value, "MIN is larger than MAX");
  return {lo, hi};
}

agent::StdSpec parse_std_spec(const std::string& flag, const std::string& value) {
  agent::StdSpec spec;
  std::string v = trim(value);
  if (v.find(':') == std::string::npos) {
    spec.all = parse_std_digit(flag, value, v);
    return spec;
  }
  for (const auto& item : split(v, ',')) {
    auto kv = split(item, ':');
    int rank = -1;
    if (kv.size() != 2 || !to_int(trim(kv[0]), rank) || rank < 0) {
      fail(flag, value, "map entries must be local_rank:std, e.g. 0:1,1:2");
    }
    spec.per_rank[rank] = parse_std_digit(flag, value, trim(kv[1]));
  }
  return spec;
}

std::map<std::string, std::string> parse_key_values(const std::string& flag,
                                                    const std::string& value) {
  std::map<std::string, std::string> out;
  if (trim(value).empty()) return out;
  for (const auto& item : split(value, ',')) {
    size_t eq = item.find('=');
    std::string key = trim(item.substr(0, eq));
    if (eq == std::string::npos || key.empty()) {
      fail(flag, value, "expected key=value pairs separated by commas, got '" + item + "'");
    }
    out[key] = trim(item.substr(eq + 1));
  }
  return out;
}

std::set<int> parse_rank_list(const std::string& flag, const std::string& value) {
  std::set<int> ranks;
  if (trim(value).empty()) return ranks;
  for (const auto& item : split(value, ',')) {
    int r = -1;
    if (!to_int(trim(item), r) || r < 0) {
      fail(flag, value, "expected comma-separated local ranks, e.g. 0,1");
    }
    ranks.insert(r);
  }
  return ranks;
}

bool parse_bool(const std::string& flag, const std::string& value) {
  std::string v = trim(value);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  if (v == "1" || v == "true") return true;
  if (v == "0" || v == "false") return false;
  fail(flag, value, "expected 1 or 0");
}

}  // namespace ddprun::launcher
