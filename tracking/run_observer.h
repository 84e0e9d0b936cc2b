#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>


namespace ddprun::tracking {

/// What the agent tells the job's experiment run as the job goes: notifications only.
/// The agent reports here and knows nothing more of tracking (which reads the workers'
/// streams and samples the system on its own clock); tracking knows nothing of the
/// agent. Called on the agent's thread; implementations report their own errors and
/// never throw.
/// A node kept out of the rounds (--node_failure_limit) until `until` (wall seconds).
struct QuarantinedNode {
  std::string node;
  double until = 0;
  std::string reason;
};

/// Workers' records a node took into the run, and those it skipped (torn or malformed).
struct RecordCounts {
  uint64_t ingested = 0;
  uint64_t skipped = 0;
};

/// A round of the rendezvous as it formed: what the run records of it.
struct FormedRound {
  int round = 0;
  int attempt = 0;  // the restart count
  int world_size = 0;
  /// Node ids by group rank: none for a single node, nor where this node knows only
  /// its own seat (rendezvous_handler.h).
  std::vector<std::string> members;
  std::vector<std::string> spares;   // nodes waiting as hot spares as it formed
  std::vector<QuarantinedNode> quarantined;  // nodes kept out as it formed
  // Where the job's run takes this node's records: what the primary's attach()
  // returned ("" on the primary, and where it has no run).
  std::string primary_run;
};

class RunObserver {
 public:
  virtual ~RunObserver() = default;

  /// A job of several nodes: the rendezvous is up (before the first round); `primary`
  /// is true on the job's one primary agent (the run's one writer), which the others
  /// reach at its `address`. The primary returns where its run takes the other agents'
  /// records, which the agent publishes for them (FormedRound::primary_run); "" on the
  /// others, or where the primary has no run. (A single node's run is not called.)
  virtual std::string attach(const std::string& address, bool primary) = 0;
  /// Extra environment for one worker (where it writes its records, ...).
  virtual void add_worker_env(int node, int rank, int attempt,
                              std::map<std::string, std::string>& env) = 0;
  virtual void rendezvous_complete(const FormedRound& formed) = 0;
  /// Whether the attempt's workers may start now: the observer holds them until it is
  /// ready for them (the last attempt's streams read). With `wait`, it
  /// returns once they may (true); the agent sets workers up meanwhile, then waits.
  virtual bool may_start_workers(int attempt, bool wait) {
    (void)attempt, (void)wait;
    return true;
  }
  virtual void worker_started(int node, int rank, int local_rank, int attempt, pid_t pid) = 0;
  /// `exitcode` as torchrun: negative for a signal.
  virtual void worker_exited(int node, int rank, int local_rank, int attempt, int exitcode) = 0;
  /// The job hung in this attempt: `report_json` holds the reason, the culprits and
  /// every rank's state and stacks (group rank 0's agent alone calls it: it judged them).
  virtual void hang(int attempt, const std::string& report_json) = 0;
  /// torchrun's worker watchdog signalled a worker whose timer expired: `data_json` holds
  /// the scope, signal, pid and how long the timer was and how late it fired.
  virtual void watchdog_reaped(int node, int rank, int attempt, const std::string& data_json) {
    (void)node, (void)rank, (void)attempt, (void)data_json;
  }
  /// A directory of this node's in the run for files the agent collects there (a
  /// hang's NCCL flight recorder dumps), made on the first call; "" where there is
  /// none (the agent keeps such files in its log directory then). It outlives the job.
  virtual std::string files_dir() { return ""; }
  /// The primary agent saw the hot spares waiting change while the round runs (the
  /// nodes as of now; none: the last one left or took a place).
  virtual void spares_waiting(int attempt, const std::vector<std::string>& spares) {
    (void)attempt, (void)spares;
  }
  /// Preflight's link check of the attempt's round: `report_json` holds the nodes, each
  /// one's probe of the next and what was slow (group rank 0's agent alone calls it).
  virtual void links_probed(int attempt, const std::string& report_json) {
    (void)attempt, (void)report_json;
  }
  /// Straggler detection named a rank or node that slows the job: `data_json` says
  /// who (rank or node, host), its score, its own work per step and the job's median.
  /// Comes from the node that judges (group rank 0) only.
  virtual void straggler_named(int attempt, const std::string& data_json) {
    (void)attempt, (void)data_json;
  }
  /// Straggler detection's scores of every rank with steps, now and then (the
  /// dashboard's rank x time view), from the judging node only.
  virtual void straggler_scores(int attempt, const std::string& data_json) {
    (void)attempt, (void)data_json;
  }
  /// When this node's ranks stepped in the attempt so far (goodput accounting):
  /// `data_json` holds, per rank, its steps, its first and last step's end and its last
  /// checkpoint (wall clock, us). Comes at the attempt's end, and now and then before.
  virtual void steps_marked(int node, int attempt, const std::string& data_json) {
    (void)node, (void)attempt, (void)data_json;
  }
  /// The round ended for everyone: kind is restart, membership or final.
  virtual void round_over(int attempt, const std::string& kind, const std::string& reason) = 0;
  /// The attempt's workers are all gone (its round may go on).
  virtual void attempt_ended() = 0;
  /// The job is over: status finished, failed or killed. Comes after the
  /// attempt_ended() of the last attempt. The observer may complete the run while the agent ends (its
  /// log directory, its store): the run is whole once complete() returns or the
  /// observer is destroyed.
  virtual void finished(const std::string& status, int exitcode, const std::string& root_cause) = 0;
  /// Returns once everything reported is in the run.
  virtual void complete() {}
  /// Workers' records this node took into the run so far, and those it skipped; none
  /// where nothing is tracked. Any thread.
  virtual std::optional<RecordCounts> record_counts() const { return std::nullopt; }
};

}  // namespace ddprun::tracking
