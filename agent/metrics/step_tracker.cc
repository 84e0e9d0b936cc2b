#include "agent/metrics/step_tracker.h"

#include <algorithm>

namespace ddprun::agent {

const std::vector<double>& StepTracker::bounds() {
  static const std::vector<double> b{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};
  return b;
}

void StepTracker::start_attempt(int workers, std::chrono::milliseconds now) {
  ranks_.assign(static_cast<size_t>(std::max(workers, 0)), Rank{now, 0, 0, std::nullopt, now});
}

void StepTracker::observe(int local_rank, const ProgressSample& sample,
                          std::chrono::milliseconds now) {
  if (local_rank < 0 || static_cast<size_t>(local_rank) >= ranks_.size()) return;
  Rank& r = ranks_[static_cast<size_t>(local_rank)];
  if (sample.beats != r.beats || sample.output != r.output || sample.step != r.step) {
    r.last_progress = now;
  }
  r.beats = sample.beats;
  r.output = sample.output;
  if (sample.step && r.step && *sample.step > *r.step) {
    int64_t steps = *sample.step - *r.step;
    count_steps(steps, static_cast<double>((now - r.step_at).count()) / 1000.0);
  }
  if (sample.step != r.step) r.step_at = now;
  r.step = sample.step;
}

void StepTracker::count_steps(int64_t steps, double seconds) {
  double each = seconds / static_cast<double>(steps);
  auto at = std::lower_bound(times_.bounds.begin(), times_.bounds.end(), each);
  auto n = static_cast<uint64_t>(steps);
  if (at == times_.bounds.end()) {
    times_.above += n;
  } else {
    times_.counts[static_cast<size_t>(at - times_.bounds.begin())] += n;
  }
  times_.sum += seconds;
}

double StepTracker::seconds_since_progress(int local_rank, std::chrono::milliseconds now) const {
  if (local_rank < 0 || static_cast<size_t>(local_rank) >= ranks_.size()) return 0;
  return static_cast<double>((now - ranks_[static_cast<size_t>(local_rank)].last_progress).count()) /
         1000.0;
}

std::optional<int64_t> StepTracker::step(int local_rank) const {
  if (local_rank < 0 || static_cast<size_t>(local_rank) >= ranks_.size()) return std::nullopt;
  return ranks_[static_cast<size_t>(local_rank)].step;
}

}  // namespace ddprun::agent
