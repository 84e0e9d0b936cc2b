#pragma once

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "agent/run_observer.h"
#include "tracking/run_store.h"
#include "tracking/stream_ingester.h"
#include "tracking/system_metrics.h"

namespace ddprun::tracking {

/// Owns the job's run: `<tracking dir>/<run id>/run.db` plus the workers' stream files.
/// Created before any worker starts (an unwritable directory fails the launch); records
/// the launcher's lifecycle events; ingests worker streams on the agent's interval and
/// at the end of every attempt; writes the final status. A database error during the
/// job is reported once and never stops the workers.
class RunTracker : public agent::RunObserver {
 public:
  struct Options {
    std::string tracking_dir = "./ddprun-runs";
    std::string run_id;
    std::string run_name;
    std::string command_json = "[]";  // the launch command
    std::string config_json = "{}";   // the launch configuration
    std::string python_dir;           // where ddprun_tracking.py lives (put on PYTHONPATH)
    std::chrono::milliseconds system_interval{15'000};  // between system metric samples
  };

  /// Throws TrackingError naming the directory when it cannot be created or written.
  explicit RunTracker(Options options);

  const std::string& run_dir() const { return run_dir_; }

  void add_worker_env(int node, int rank, int attempt,
                      std::map<std::string, std::string>& env) override;
  void rendezvous_complete(int round, int attempt, int world_size,
                           const std::vector<std::string>& members) override;
  void worker_started(int node, int rank, int local_rank, int attempt, pid_t pid) override;
  void worker_exited(int node, int rank, int local_rank, int attempt, int exitcode) override;
  void round_over(int attempt, const std::string& kind, const std::string& reason) override;
  void poll(bool attempt_over) override;
  /// Every second, or as often as system metrics are sampled if that is more often.
  std::chrono::milliseconds poll_interval() const override {
    return std::min<std::chrono::milliseconds>(std::chrono::seconds(1), options_.system_interval);
  }
  void finished(const std::string& status, int exitcode, const std::string& root_cause) override;

 private:
  void event(const std::string& kind, int node, int rank, int attempt, const std::string& data);
  template <typename F>
  void guarded(const char* what, F f);

  void sample_system(bool force);

  Options options_;
  std::string run_dir_;
  SystemSampler sampler_;
  std::map<int, pid_t> live_workers_;  // global rank -> pid
  int node_ = 0;
  std::chrono::steady_clock::time_point last_sample_{};
  std::unique_ptr<RunStore> store_;
  std::unique_ptr<StreamIngester> ingester_;
  bool error_reported_ = false;
};

/// Reads what a run is: its status ("crashed" for a run left running whose owner is
/// gone), for `ddprun runs`.
std::string effective_status(RunStore& store);

}  // namespace ddprun::tracking
