#include "launcher/value_parsers.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <csignal>
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

// The signals a user may have ddprun catch: the ones that stop or warn a job. SIGKILL,
// SIGSTOP cannot be caught; SIGCHLD, SIGPIPE and SIGCONT are ddprun's own business.
constexpr std::pair<const char*, int> kSignals[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"TERM", SIGTERM}, {"USR1", SIGUSR1},
    {"USR2", SIGUSR2}, {"ALRM", SIGALRM}, {"XCPU", SIGXCPU}, {"PWR", SIGPWR},   {"WINCH", SIGWINCH},
};

}  // namespace

std::vector<int> parse_signal_list(const std::string& flag, const std::string& value) {
  std::vector<int> out;
  if (trim_text(value).empty()) return out;
  std::string unknown;
  for (const auto& item : split_text(value, ',')) {
    std::string name = trim_text(item);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return std::toupper(c); });
    if (name.rfind("SIG", 0) == 0) name = name.substr(3);
    auto it = std::find_if(std::begin(kSignals), std::end(kSignals),
                           [&name](const auto& s) { return name == s.first; });
    if (it == std::end(kSignals)) {
      unknown += (unknown.empty() ? "" : ", ") + trim_text(item);
    } else if (std::find(out.begin(), out.end(), it->second) == out.end()) {
      out.push_back(it->second);
    }
  }
  if (!unknown.empty()) {
    std::string valid;
    for (const auto& [name, sig] : kSignals)
      valid += (valid.empty() ? "SIG" : ", SIG") + std::string(name);
    fail_value(flag, value, "unknown or uncatchable signal(s) " + unknown + "; expected " + valid);
  }
  return out;
}

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

std::vector<std::string> parse_filter_list(const std::string& value) {
  std::vector<std::string> filters(1);
  for (size_t i = 0; i < value.size(); ++i) {
    if (value[i] != ',') {
      filters.back() += value[i];
    } else if (i + 1 < value.size() && value[i + 1] == ',') {
      filters.back() += ',';
      ++i;
    } else {
      filters.emplace_back();
    }
  }
  std::erase(filters, std::string());
  return filters;
}

}  // namespace ddprun::launcher
