#include "agent/hang/hang_monitor.h"

#include <algorithm>

namespace ddprun::agent {

using std::chrono::milliseconds;

void HangMonitor::start_attempt(int workers, milliseconds now) {
  workers_.assign(static_cast<size_t>(workers), Progress{now, 0, {}});
}

void HangMonitor::observe(int local_rank, const ProgressSample& sample, milliseconds now) {
  Progress& w = workers_.at(local_rank);
  bool moved = sample.beats != w.sample.beats || sample.output != w.sample.output;
  w.sample = sample;
  if (!moved) return;
  // The interval before the first progress is start-up (imports, loading): not learned.
  if (w.signals > 0) longest_ = std::max(longest_, now - w.last);
  w.last = now;
  ++w.signals;
}

std::optional<milliseconds> HangMonitor::timeout_of(int local_rank) const {
  const Progress& w = workers_.at(local_rank);
  if (w.sample.in_section) return w.sample.section_timeout;
  bool auto_mode = options_.mode == HangOptions::Mode::kAuto;
  if (w.signals == 0 || (auto_mode && w.signals < kWarmup)) return options_.initial_timeout;
  if (!auto_mode) return options_.timeout;
  auto learned = std::chrono::duration_cast<milliseconds>(longest_ * options_.factor);
  return std::max(learned, options_.min_timeout);
}

std::optional<Stall> HangMonitor::check(milliseconds now) const {
  if (!options_.enabled()) return std::nullopt;
  std::optional<Stall> worst;
  milliseconds worst_over{-1};
  for (size_t i = 0; i < workers_.size(); ++i) {
    auto limit = timeout_of(static_cast<int>(i));
    if (!limit) continue;
    milliseconds idle = now - workers_[i].last;
    if (idle <= *limit || idle - *limit <= worst_over) continue;
    worst_over = idle - *limit;
    const ProgressSample& s = workers_[i].sample;
    worst = Stall{static_cast<int>(i), idle, *limit, s.in_section ? s.section : ""};
  }
  return worst;
}

milliseconds HangMonitor::check_interval() const {
  milliseconds shortest{1000};
  for (size_t i = 0; i < workers_.size(); ++i) {
    if (auto limit = timeout_of(static_cast<int>(i))) shortest = std::min(shortest, *limit / 4);
  }
  return std::clamp(shortest, milliseconds(100), milliseconds(1000));
}

}  // namespace ddprun::agent
