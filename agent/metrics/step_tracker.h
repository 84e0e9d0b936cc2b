#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "agent/hang/hang_monitor.h"
#include "agent/metrics/job_metrics.h"

namespace ddprun::agent {

/// Follows this node's ranks' progress for the metrics endpoint, from looks at their
/// progress counters (pure logic: times come from the caller): when each last made
/// progress, its last step, and how long steps take (a look that finds a rank k steps
/// further than the last change counts k steps of an equal share of the time between).
class StepTracker {
 public:
  /// Upper bounds of the step-time buckets, in seconds.
  static const std::vector<double>& bounds();

  /// A new attempt: `workers` ranks start now, with no progress yet.
  void start_attempt(int workers, std::chrono::milliseconds now);
  void observe(int local_rank, const ProgressSample& sample, std::chrono::milliseconds now);

  /// Seconds since `local_rank`'s last progress (or its start).
  double seconds_since_progress(int local_rank, std::chrono::milliseconds now) const;
  std::optional<int64_t> step(int local_rank) const;
  /// Every step seen in this job, across attempts.
  const JobMetrics::StepTimes& step_times() const { return times_; }

 private:
  struct Rank {
    std::chrono::milliseconds last_progress{0};
    uint64_t beats = 0, output = 0;
    std::optional<int64_t> step;
    std::chrono::milliseconds step_at{0};
  };
  void count_steps(int64_t steps, double seconds);

  std::vector<Rank> ranks_;
  JobMetrics::StepTimes times_{bounds(), std::vector<uint64_t>(bounds().size(), 0), 0, 0};
};

}  // namespace ddprun::agent
