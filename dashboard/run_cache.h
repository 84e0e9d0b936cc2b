#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "tracking/run_store.h"

namespace ddprun::dashboard {

/// One point of a chart line: x is the step when logged, else the record's sequence number.
struct ChartPoint {
  double x = 0;
  double value = 0;
  double wall = 0;
};

/// One line: the points one rank logged under one key in one attempt, in order.
struct Series {
  int rank = 0;
  int node = 0;
  int attempt = 0;
  int64_t last_seq = -1;
  std::vector<ChartPoint> points;
};

/// What the dashboard has read of its recent runs, so that a page polling a running
/// job costs what was added since its last look, not a scan of the whole run: points
/// are only ever added to a run, each with a larger row id. Keeps the `kRuns` runs
/// looked at last; a run whose rows went back (deleted and made again) is read afresh.
/// Thread-safe.
class RunCache {
 public:
  static constexpr size_t kRuns = 4;

  /// Every metric key of the run with its number of points, brought up to date.
  std::map<std::string, int64_t> metric_counts(const std::string& run_dir,
                                               tracking::RunStore& store);
  /// Lines by (rank, attempt).
  using Lines = std::map<std::pair<int, int>, Series>;
  /// Brings the lines of one key up to date and shows them to `use` (no line: no such
  /// key), under the cache's lock.
  void with_series(const std::string& run_dir, tracking::RunStore& store, const std::string& key,
                   const std::function<void(const Lines&)>& use);

 private:
  struct KeyLines {
    int64_t upto = 0;  // rows read
    Lines lines;
  };
  struct Run {
    std::string dir;
    std::string created;  // the run's creation time: another run in the same place differs
    int64_t counted = 0;  // rows counted
    std::map<std::string, int64_t> counts;
    std::map<std::string, KeyLines> keys;
  };

  Run& run(const std::string& run_dir, tracking::RunStore& store, int64_t& last_row);

  std::mutex mutex_;
  std::list<Run> runs_;  // most recently used first
};

}  // namespace ddprun::dashboard
