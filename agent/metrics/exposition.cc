#include "agent/metrics/exposition.h"

#include <cmath>

#include <fmt/format.h>

namespace ddprun::agent {
namespace {

// Backslash, double quote and newline are escaped in label values; backslash and
// newline in help text.
std::string escaped(std::string_view s, bool quote) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string exposition_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{}", v);
}

void Exposition::family(std::string_view name, std::string_view type, std::string_view help) {
  out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, escaped(help, false), name, type);
}

void Exposition::sample(std::string_view name, const Labels& labels, double value) {
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      out_ += fmt::format("{}{}=\"{}\"", i ? "," : "", labels[i].first, escaped(labels[i].second, true));
    }
    out_ += '}';
  }
  out_ += ' ';
  out_ += exposition_number(value);
  out_ += '\n';
}

void Exposition::histogram(std::string_view name, const Labels& labels,
                           const std::vector<double>& bounds, const std::vector<uint64_t>& counts,
                           uint64_t above, double sum) {
  uint64_t cumulative = 0;
  std::string bucket = std::string(name) + "_bucket";
  for (size_t i = 0; i < bounds.size(); ++i) {
    cumulative += i < counts.size() ? counts[i] : 0;
    Labels with = labels;
    with.emplace_back("le", exposition_number(bounds[i]));
    sample(bucket, with, static_cast<double>(cumulative));
  }
  cumulative += above;
  Labels with = labels;
  with.emplace_back("le", "+Inf");
  sample(bucket, with, static_cast<double>(cumulative));
  sample(std::string(name) + "_sum", labels, sum);
  sample(std::string(name) + "_count", labels, static_cast<double>(cumulative));
}

}  // namespace ddprun::agent
