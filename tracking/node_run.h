#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tracking/own_records.h"
#include "tracking/run_observer.h"
#include "tracking/record_lines.h"
#include "tracking/run_store.h"
#include "tracking/stream_watcher.h"
#include "tracking/system_metrics.h"

namespace ddprun::tracking {

/// Now, in seconds since the epoch, as the run's events carry it.
double wall_seconds();

/// Makes `dir` (and its parents) unless it exists. Throws TrackingError naming
/// `name_in_error` when it cannot be made or written.
void make_writable_dir(const std::string& dir, const std::string& name_in_error);

/// How a job's run is made and recorded (the launcher fills it from its flags).
struct RunOptions {
  std::string tracking_dir = "./ddprun-runs";
  std::string run_id;
  std::string run_name;
  std::string command_json = "[]";                    // the launch command
  std::string config_json = "{}";                     // the launch configuration
  std::chrono::milliseconds system_interval{15'000};  // between system metric samples
  // An attempt whose first worker exits sooner than this after their start takes no
  // system sample then: its processes lived too briefly to measure, and the sample
  // costs 0.4 ms of CPU beside a launch of /bin/true. Zero: always sampled (Python
  // workers: an interpreter alone takes longer to start).
  std::chrono::milliseconds unsampled_exit{50};
  bool multi_node = false;  // primary or not is known once the store is up (attach)
  std::string token;        // the job token: record forwarding requires it ("" = none)
  bool listen_all = false;  // the receiver listens on every interface, not the address
};

/// One node's part of the job's run, as the primary's run (PrimaryRun) and a forwarding
/// node's (ForwardingRun) both have it: the agent's own records (queued by the agent's
/// thread, written by the stream thread a moment later, many to a write), the workers'
/// streams under node_dir() passed on by the stream thread whenever they are written,
/// and system samples on the stream thread's own clock. What a pass does with the
/// streams (fold them into run.db, or send them to the primary) is the kind's.
///
/// Thread-safety: the public calls from the agent's thread only; the stream thread
/// runs the passes.
class NodeRun {
 public:
  virtual ~NodeRun();
  NodeRun(const NodeRun&) = delete;
  NodeRun& operator=(const NodeRun&) = delete;

  const std::string& run_name() const { return run_name_; }
  const std::string& run_dir() const { return run_dir_; }
  const std::string& node_dir() const { return node_dir_; }

  /// An event of this node's (a worker's start or exit, a watchdog's signal).
  void record(const Event& e);
  /// An event of the whole job, which every agent learns (a round, a hang, a restart):
  /// recorded by the primary only.
  virtual void record_job_event(const Event& e) = 0;

  void worker_started(int node, int rank, int local_rank, int attempt, pid_t pid);
  void worker_exited(int node, int rank, int local_rank, int attempt, int exitcode);
  /// See RunObserver::may_start_workers.
  bool may_start_workers(bool wait);
  virtual void attempt_ended();
  /// <run dir>/files/<host>.<pid>, made on the first call ("" when it cannot be).
  std::string files_dir();
  /// See RunObserver::finished and complete.
  virtual void finished(const std::string& status, int exitcode, const std::string& root_cause) = 0;
  virtual void complete() {}
  /// The directory of the job's run.db where this node keeps it (the primary), ""
  /// where its records go elsewhere.
  virtual std::string job_run_dir() const { return {}; }

  /// Worker records taken from this node's streams so far, and those skipped (torn or
  /// malformed). Any thread.
  RecordCounts record_counts() const {
    return {records_.load(std::memory_order_relaxed), skipped_.load(std::memory_order_relaxed)};
  }

 protected:
  NodeRun(RunOptions options, std::string agent_id);

  // Where the run is; a constructor's to say.
  void place(std::string run_name, std::string run_dir, std::string node_dir);
  // Starts the stream thread over <node dir>/streams (own_ has its path by then).
  void start_stream_thread();
  // Runs `job` on the stream thread (at once where there is none).
  void on_stream_thread(std::function<void()> job);
  // The kind's part of a pass: the workers' streams folded or sent (their skipped
  // lines counted). On the stream thread.
  virtual IngestStats pass_streams(bool final) = 0;
  // A derived destructor's first step: the stream thread ends (a final pass asked
  // for or what the agent recorded still queued runs first) while the kind's members
  // that its passes use still exist.
  void stop_stream_thread();
  void remove_empty_files_dir();
  // Runs f, reporting its error once (tracking never stops training).
  void guarded(const char* what, const std::function<void()>& f);

  const RunOptions options_;
  const std::string agent_id_;  // <host>.<pid>
  OwnRecords own_;              // the stream thread's
  std::unique_ptr<StreamWatcher> watcher_;
  // An attempt's last pass over its streams, awaited before the next one's workers start.
  std::optional<uint64_t> pending_final_;

 private:
  void stream_pass(bool final);
  IngestStats counted(IngestStats stats);
  void run_jobs();
  bool report_skipped(const IngestStats& stats);  // true: an event says so
  void sample_when_due();
  std::map<int, pid_t> take_due_sample(std::chrono::steady_clock::time_point now);
  void sample_system(const std::map<int, pid_t>& workers);
  std::chrono::milliseconds pass_interval() const;
  std::atomic<uint64_t> records_{0}, skipped_{0};  // see record_counts()

  std::string run_name_;   // the run's id: the rendezvous id, or <id>.<n> when it was taken
  std::string run_dir_;    // <tracking dir>/<run name>
  std::string node_dir_;   // where this node's streams are: run_dir_, or its part
  std::string files_dir_;  // made by files_dir(); "" until then
  std::atomic<int> node_{0};  // read by the stream thread too
  std::unique_ptr<SystemSampler> sampler_;  // the stream thread's, made by its first sample
  // What the system samples go by: the agent's thread writes it, the stream thread
  // (which takes the samples on its own clock) reads it.
  std::mutex sample_mutex_;
  std::map<int, pid_t> live_workers_;  // global rank -> pid
  std::chrono::steady_clock::time_point last_sample_{};
  std::chrono::steady_clock::time_point attempt_started_{};  // its first worker's start
  int attempt_workers_ = 0;  // workers this node started in the current attempt
  // What the agent recorded, for the stream thread's next pass.
  std::mutex jobs_mutex_;
  std::vector<std::function<void()>> jobs_;
  std::atomic<bool> error_reported_{false};
};

}  // namespace ddprun::tracking
