#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tracking/node_run.h"
#include "tracking/run_observer.h"
#include "tracking/run_store.h"

namespace ddprun::tracking {

/// The job's run, as the agent reports to it (RunObserver). This node's part of the run
/// is one of two kinds, chosen once:
///   - PrimaryRun: the run's one writer, the primary agent (the only agent of a
///     single-node job, made with the tracker; in a multi-node job the agent hosting the
///     rendezvous store, made at attach(), which also takes the other agents' records);
///   - ForwardingRun: every other agent of a multi-node job, made at its first round
///     from what the primary published (FormedRound::primary_run).
/// Until this node's part exists (and where it could not be made) reports go nowhere.
/// A database or network error during the job is reported once and never stops the
/// workers. A job leaves a complete run.db when it ends, and readers only read; what
/// a killed launcher left unfolded is folded by `ddprun runs repair` (recover_run).
class RunTracker : public RunObserver {
 public:
  using Options = RunOptions;

  /// Throws TrackingError naming the directory when it cannot be created or written.
  explicit RunTracker(Options options);
  ~RunTracker() override;

  /// The directory this node's workers write their streams under ("" before it has one).
  const std::string& run_dir() const;
  /// The run's directory where this agent is its primary (it holds run.db), else "".
  std::string primary_run_dir() const;

  std::string attach(const std::string& address, bool primary) override;
  void add_worker_env(int node, int rank, int attempt,
                      std::map<std::string, std::string>& env) override;
  bool may_start_workers(int attempt, bool wait) override;
  void rendezvous_complete(const FormedRound& formed) override;
  void spares_waiting(int attempt, const std::vector<std::string>& spares) override;
  void worker_started(int node, int rank, int local_rank, int attempt, pid_t pid) override;
  void worker_exited(int node, int rank, int local_rank, int attempt, int exitcode) override;
  void hang(int attempt, const std::string& report_json) override;
  void links_probed(int attempt, const std::string& report_json) override;
  void straggler_named(int attempt, const std::string& data_json) override;
  void straggler_scores(int attempt, const std::string& data_json) override;
  void steps_marked(int node, int attempt, const std::string& data_json) override;
  std::optional<RecordCounts> record_counts() const override;
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
  void guarded(const char* what, const std::function<void()>& f);

  Options options_;
  std::string agent_id_;  // <host>.<pid>
  // A forwarding node's, until its first round, which says where the primary's run is.
  bool awaiting_primary_ = false;
  std::unique_ptr<NodeRun> run_;  // this node's part of the run; null until chosen
  bool error_reported_ = false;
};

/// Reads what a run is: its status ("crashed" for a run left running whose owner is
/// gone), for `ddprun runs`.
std::string effective_status(RunStore& store);

}  // namespace ddprun::tracking
