#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ddprun::agent {

/// Prometheus' text exposition format (version 0.0.4), written family by family: a
/// family's # HELP and # TYPE lines, then its samples. Label values are escaped; label
/// sets are the caller's to keep bounded.
class Exposition {
 public:
  using Labels = std::vector<std::pair<std::string, std::string>>;
  static constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

  /// Starts a family: `type` is counter, gauge or histogram.
  void family(std::string_view name, std::string_view type, std::string_view help);
  /// One sample of the family begun last (`suffix`: _bucket, _sum, _count of a histogram).
  void sample(std::string_view name, const Labels& labels, double value);
  /// A histogram's samples: `bounds` ascending, `counts` per bound (not cumulative),
  /// the count above the last bound, the sum.
  void histogram(std::string_view name, const Labels& labels, const std::vector<double>& bounds,
                 const std::vector<uint64_t>& counts, uint64_t above, double sum);

  const std::string& text() const { return out_; }

 private:
  std::string out_;
};

/// A number as the format writes it: integers without a fraction, NaN, +Inf, -Inf.
std::string exposition_number(double v);

}  // namespace ddprun::agent
