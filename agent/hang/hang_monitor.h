#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/hang/hang_options.h"

namespace ddprun::agent {

/// A worker's timed steps so far (straggler detection): how many, their total time,
/// and of it the worker's own work, not waiting for the other ranks.
struct StepCounters {
  uint64_t steps = 0;
  uint64_t step_ns = 0;
  uint64_t own_ns = 0;
};

/// When a worker's steps happened (goodput accounting): its first and last timed step's
/// end and its last declared checkpoint, wall clock in us since the epoch (0: none).
struct StepMarks {
  int64_t first_step_us = 0;
  int64_t last_step_us = 0;
  int64_t checkpoint_us = 0;
  std::optional<int64_t> checkpoint_step;
};

/// What one look at a worker shows of its progress: counters that move when it makes
/// progress, and what it said of where it is.
struct ProgressSample {
  uint64_t beats = 0;   // progress calls so far (log, config, summary, heartbeat, section)
  uint64_t output = 0;  // output reads so far
  std::optional<int64_t> step;
  bool in_section = false;
  std::string section;
  std::optional<std::chrono::milliseconds> section_timeout;  // none: no limit
  StepCounters timed;
  StepMarks marks;
};

/// A worker that made no progress for longer than its timeout.
struct Stall {
  int local_rank = 0;
  std::chrono::milliseconds idle{0};
  std::chrono::milliseconds timeout{0};
  std::string section;  // the section it is in, if any
};

/// Decides when a worker of this node has hung, from progress samples taken on the
/// agent's timer (pure logic: times come from the caller).
///
/// Any change of a worker's counters is progress. Until a worker's first progress
/// (in auto mode: its first kWarmup), `initial_timeout` applies; then the fixed
/// timeout, or in auto mode `factor` x the longest interval between progress seen on
/// any worker (learned across attempts; other nodes' through adopt_longest()), at least
/// `min_timeout`. Inside a section the section's own timeout applies (none: never
/// flagged there).
class HangMonitor {
 public:
  static constexpr uint64_t kWarmup = 3;

  /// Where one worker stands.
  struct Progress {
    std::chrono::milliseconds last{0};  // clock time of the last progress (or start)
    uint64_t signals = 0;               // progress seen since the attempt began
    ProgressSample sample;              // the latest look
  };

  explicit HangMonitor(const HangOptions& options) : options_(options) {}

  /// A new attempt: `workers` workers start now, with no progress yet.
  void start_attempt(int workers, std::chrono::milliseconds now);
  void observe(int local_rank, const ProgressSample& sample, std::chrono::milliseconds now);
  /// The worker longest past its timeout, if any.
  std::optional<Stall> check(std::chrono::milliseconds now) const;
  /// How long a worker may go without progress now (nullopt: no limit).
  std::optional<std::chrono::milliseconds> timeout_of(int local_rank) const;
  /// How often to look: a quarter of the shortest timeout, within [100 ms, 1 s].
  std::chrono::milliseconds check_interval() const;
  /// Auto mode: the longest interval between progress seen so far (0: none yet).
  std::chrono::milliseconds longest_interval() const { return longest_; }
  /// Auto mode: learns a longer interval seen elsewhere (another node's workers).
  void adopt_longest(std::chrono::milliseconds longest) { longest_ = std::max(longest_, longest); }
  const Progress& progress(int local_rank) const { return workers_.at(local_rank); }

 private:
  const HangOptions& options_;
  std::vector<Progress> workers_;
  std::chrono::milliseconds longest_{0};
};

}  // namespace ddprun::agent
