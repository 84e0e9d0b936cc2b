#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tracking/record_forwarder.h"
#include "tracking/own_records.h"
#include "tracking/record_receiver.h"
#include "tracking/run_observer.h"
#include "tracking/run_owner_lock.h"
#include "tracking/run_store.h"
#include "tracking/stream_ingester.h"
#include "tracking/stream_watcher.h"
#include "tracking/system_metrics.h"

namespace ddprun::tracking {

/// Owns the job's run: `<tracking dir>/<run id>/run.db` plus the workers' stream files.
/// Created before any worker starts (an unwritable directory fails the launch): the
/// directory, locked by its owner (RunOwnerLock), a run from then on (run_exists); the
/// stream thread's first pass writes run.db, an empty run, a moment later.
///
/// The primary agent (the one hosting the rendezvous store; the only agent of a
/// single-node job) owns the run. What it records itself (the run's description,
/// lifecycle events, system metrics and the run's end) is queued for the stream thread,
/// which appends it to `<run dir>/launcher.jsonl` (kLauncherStream) a moment later, many
/// records to a write, and folds that file and the workers' streams into run.db (one
/// transaction a pass): no database call is on the agent's path from its start to its
/// workers' and back. Readers see the run while it runs, all of it once ddprun exits.
/// A job leaves a complete run.db when it ends, and readers only read; what a killed
/// launcher left unfolded is folded by `ddprun runs repair` (recover_run). In a
/// multi-node job the primary also takes what the other agents forward
/// (RecordReceiver, endpoint published in the rendezvous store); every other agent
/// keeps its node's records in `<run dir>/parts/<host>.<pid>/` and forwards them
/// (RecordForwarder); the part is deleted once the primary holds all of it, else kept
/// for `ddprun runs merge`. A database or network error during the job is reported
/// once and never stops the workers.
class RunTracker : public RunObserver {
 public:
  struct Options {
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

  /// Throws TrackingError naming the directory when it cannot be created or written.
  explicit RunTracker(Options options);
  ~RunTracker() override;

  /// The directory this node's workers write their streams under.
  const std::string& run_dir() const { return node_dir_; }

  void attach(store::Store& store, std::unique_ptr<store::Store> own,
              const std::string& address, bool primary) override;
  void add_worker_env(int node, int rank, int attempt,
                      std::map<std::string, std::string>& env) override;
  bool may_start_workers(int attempt, bool wait) override;
  void rendezvous_complete(int round, int attempt, int world_size,
                           const std::vector<std::string>& members) override;
  void worker_started(int node, int rank, int local_rank, int attempt, pid_t pid) override;
  void worker_exited(int node, int rank, int local_rank, int attempt, int exitcode) override;
  void hang(int attempt, const std::string& report_json) override;
  void watchdog_reaped(int node, int rank, int attempt, const std::string& data_json) override;
  void round_over(int attempt, const std::string& kind, const std::string& reason) override;
  /// <run dir>/files/<host>.<pid>: beside the run's records on every node, kept
  /// when a node's part of the run goes (an empty one goes with the job).
  std::string files_dir() override;
  /// The attempt's last pass over its streams; the next attempt's workers wait for it.
  void attempt_ended() override;
  /// The primary's stream thread ends meanwhile; complete() (or the destructor) runs
  /// the last pass: everything is in run.db once it returns.
  void finished(const std::string& status, int exitcode, const std::string& root_cause) override;
  void complete() override;

 private:
  void become_primary();
  void become_forwarder(const std::string& run_name);
  void record(const Event& e);
  // Runs `job` on the stream thread (at once where there is none yet).
  void on_stream_thread(std::function<void()> job);
  // On the stream thread:
  void stream_pass(bool final);
  void describe(double created);  // queues the run's description
  void open_run();
  void run_jobs();
  bool report_skipped(const IngestStats& stats);  // true: an event says so
  std::string endpoint_key() const { return "ddprun/tracking/" + options_.run_id + "/endpoint"; }
  template <typename F>
  void guarded(const char* what, F f);

  std::map<int, pid_t> take_due_sample(std::chrono::steady_clock::time_point now);
  void sample_when_due();
  std::chrono::milliseconds pass_interval() const;
  void sample_system(const std::map<int, pid_t>& workers);
  void remove_empty_files_dir();

  Options options_;
  std::string run_name_;   // the run's id: the rendezvous id, or <id>.<n> when it was taken
  std::string run_dir_;    // <tracking dir>/<run name>
  std::string node_dir_;   // where this node's streams are: run_dir_, or its part
  std::string files_dir_;  // made by files_dir(); "" until then
  std::string agent_id_;
  std::unique_ptr<SystemSampler> sampler_;  // made by the first sample
  std::atomic<int> node_{0};                // read by the stream thread too
  // What the system samples go by: the agent's thread writes it, the stream thread
  // (which takes the samples on its own clock) reads it.
  std::mutex sample_mutex_;
  std::map<int, pid_t> live_workers_;  // global rank -> pid
  std::chrono::steady_clock::time_point last_sample_{};
  std::chrono::steady_clock::time_point attempt_started_{};  // its first worker's start
  int attempt_workers_ = 0;  // workers this node started in the current attempt
  store::Store* rendezvous_store_ = nullptr;
  // Non-primary: the primary's published endpoint, looked up on a thread while this
  // agent joins (empty: not published yet; then looked up again after the round).
  std::unique_ptr<store::Store> lookup_store_;
  std::future<std::string> early_endpoint_;
  std::string address_;  // how the other agents reach this one (primary)
  bool primary_ = false;
  bool primary_found_ = false;  // a forwarder knows the primary's endpoint
  // Primary: the stream thread's connection (null until it made the run, or when it
  // could not) and the receiver.
  std::unique_ptr<RunStore> store_;
  bool image_tried_ = false;  // the first pass wrote the empty run (or could not)
  bool made_ = false;         // run.db is the image made just now (RunStore::Open::kNew)
  std::unique_ptr<RunOwnerLock> owner_lock_;  // primary: held until ddprun exits
  std::unique_ptr<StreamIngester> ingester_;
  std::promise<void> opened_;          // the stream thread tried to make the run
  std::shared_future<void> run_made_;  // opened_'s: awaited before the receiver starts
  std::atomic<bool> open_tried_{false};
  std::unique_ptr<RecordReceiver> receiver_;
  // What the agent recorded, for the stream thread's next pass.
  std::mutex jobs_mutex_;
  std::vector<std::function<void()>> jobs_;
  // An attempt's last pass over its streams, awaited before the next one's workers start.
  std::optional<uint64_t> pending_final_;
  bool finishing_ = false;  // finished() was told: complete() runs the last pass
  // This agent's own records (written by the passes): the primary's launcher.jsonl in
  // the run directory, the others' agent.jsonl in their part (with the forwarder).
  OwnRecords own_;
  std::unique_ptr<RecordForwarder> forwarder_;
  std::atomic<bool> error_reported_{false};
  std::unique_ptr<StreamWatcher> watcher_;  // last: its thread stops first
};

/// Reads what a run is: its status ("crashed" for a run left running whose owner is
/// gone), for `ddprun runs`.
std::string effective_status(RunStore& store);

}  // namespace ddprun::tracking
