#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ddprun::agent {

/// A running job as one agent sees it, for its metrics endpoint: plain data the agent
/// fills at each scrape (render_metrics() writes it out).
struct JobMetrics {
  std::string run_id, backend, version, host;
  int node_rank = -1;  // before the first round, and while waiting as a spare: -1
  bool spare = false;  // this agent waits as a hot spare for a place
  int round = -1;
  int nodes = 0;       // in the round
  int world_size = 0;  // ranks in the round
  int restarts = 0;
  int membership_changes = 0;  // rounds re-formed as nodes came or went (not restarts)
  int workers_running = 0;
  int spares = 0;  // hot spares waiting, as this agent last heard
  uint64_t hangs = 0;
  struct Rank {
    int rank = 0;
    double seconds_since_progress = 0;
    std::optional<int64_t> step;
    /// Straggler detection's last window: own work per step (seconds) and its score
    /// against the job's median (none: no judgement yet).
    std::optional<double> own_seconds_per_step;
    std::optional<double> straggler_score;
  };
  std::vector<Rank> ranks;  // where hang detection watches the workers
  /// This node's goodput accounting so far (none: no step timed yet): seconds by
  /// category, in the order startup, productive, lost, hang_wait, restart, shutdown
  /// (0 while the job runs).
  struct Goodput {
    double ratio = 0;
    std::vector<std::pair<std::string, double>> seconds;
  };
  std::optional<Goodput> goodput;
  /// Seconds a step took on this node's ranks (a rank's step counter moving), bucketed.
  struct StepTimes {
    std::vector<double> bounds;
    std::vector<uint64_t> counts;  // per bound, not cumulative
    uint64_t above = 0;
    double sum = 0;
  } step_seconds;
  struct Store {
    std::string role;  // workers, rendezvous
    size_t connections = 0;
    std::vector<std::pair<std::string, uint64_t>> requests;  // by operation
  };
  std::vector<Store> stores;  // the stores this agent serves
  /// Workers' records this node took into the run, and skipped (torn or malformed);
  /// none where nothing is tracked.
  std::optional<std::pair<uint64_t, uint64_t>> records;
};

/// This process' own costs, as Prometheus' client libraries name them.
struct ProcessMetrics {
  double cpu_seconds = 0;
  double resident_bytes = 0;
  double virtual_bytes = 0;
  double open_fds = 0;
  double max_fds = 0;
  double start_time_seconds = 0;
};

/// Reads /proc/self (zeros for what cannot be read).
ProcessMetrics read_process_metrics();

/// The exposition of `job` and `process` (Prometheus' text format).
std::string render_metrics(const JobMetrics& job, const ProcessMetrics& process);

}  // namespace ddprun::agent
