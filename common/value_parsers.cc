#include "common/value_parsers.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "common/error.h"

namespace ddprun {

void fail_value(const std::string& flag, const std::string& value, const std::string& why) {
  throw UsageError(flag + "=" + value + ": " + why);
}

std::vector<std::string> split_text(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    parts.push_back(s.substr(start, pos - start));
    if (pos == std::string::npos) return parts;
    start = pos + 1;
  }
}

std::string trim_text(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

namespace {

template <typename Int>
bool whole_number(const std::string& s, Int& out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

bool to_int(const std::string& s, int& out) { return whole_number(s, out); }
bool to_int64(const std::string& s, int64_t& out) { return whole_number(s, out); }

int parse_int(const std::string& flag, const std::string& value) {
  int v = 0;
  if (!to_int(trim_text(value), v) || v < 0)
    fail_value(flag, value, "expected a non-negative integer");
  return v;
}

std::chrono::milliseconds parse_seconds(const std::string& flag, const std::string& value,
                                        bool allow_zero) {
  std::string s = trim_text(value);
  char* end = nullptr;
  double v = s.empty() ? NAN : std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v) || v < 0 ||
      (!allow_zero && v == 0) || v > 1e9) {
    fail_value(
        flag, value,
        allow_zero ? "expected a number of seconds >= 0" : "expected a number of seconds > 0");
  }
  return std::chrono::milliseconds(static_cast<long long>(std::llround(v * 1000)));
}

std::pair<int, int> parse_nnodes(const std::string& flag, const std::string& value) {
  auto parts = split_text(value, ':');
  int lo = 0;
  int hi = 0;
  bool ok = false;
  if (parts.size() == 1) {
    ok = to_int(parts[0], lo);
    hi = lo;
  } else if (parts.size() == 2) {
    ok = to_int(parts[0], lo) && to_int(parts[1], hi);
  }
  if (!ok) fail_value(flag, value, "expected N or MIN:MAX");
  if (lo < 1 || hi < 1) fail_value(flag, value, "the number of nodes must be at least 1");
  if (lo > hi) fail_value(flag, value, "MIN is larger than MAX");
  return {lo, hi};
}

std::map<std::string, std::string> parse_key_values(const std::string& flag,
                                                    const std::string& value) {
  std::map<std::string, std::string> out;
  if (trim_text(value).empty()) return out;
  for (const auto& item : split_text(value, ',')) {
    size_t eq = item.find('=');
    std::string key = trim_text(item.substr(0, eq));
    if (eq == std::string::npos || key.empty()) {
      fail_value(flag, value, "expected key=value pairs separated by commas, got '" + item + "'");
    }
    out[key] = trim_text(item.substr(eq + 1));
  }
  return out;
}

bool parse_bool(const std::string& flag, const std::string& value) {
  std::string v = trim_text(value);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  if (v == "1" || v == "true") return true;
  if (v == "0" || v == "false") return false;
  fail_value(flag, value, "expected 1 or 0");
}

}  // namespace ddprun
