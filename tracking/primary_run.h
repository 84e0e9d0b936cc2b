#pragma once

#include <future>
#include <memory>
#include <string>

#include "tracking/node_run.h"
#include "tracking/record_receiver.h"
#include "tracking/run_owner_lock.h"
#include "tracking/run_store.h"
#include "tracking/stream_ingester.h"

namespace ddprun::tracking {

/// The job's run as its one writer has it: the primary agent (the only agent of a
/// single-node job; the one hosting the rendezvous store of a multi-node job) owns
/// `<tracking dir>/<run id>/`, locked until ddprun exits (RunOwnerLock), a run from
/// then on (run_exists). Its stream thread's first pass writes run.db (an empty run)
/// and the run's description a moment later, beside the rendezvous and the workers'
/// start; every pass then folds the agent's own records (launcher.jsonl) and the
/// workers' streams into run.db, one transaction a pass. No database call is on the
/// agent's path from its start to its workers' and back. In a multi-node job it also
/// takes the records the other agents forward (serve_agents). Readers see the run
/// while it runs, all of it once complete() returns.
class PrimaryRun : public NodeRun {
 public:
  /// Makes and locks the run's directory: a job never writes into an earlier job's run,
  /// nor into one another job starts at the same moment (the same id again gets
  /// <id>.1, <id>.2, ...). Throws TrackingError naming the directory when it cannot be
  /// made or written.
  PrimaryRun(const RunOptions& options, std::string agent_id);
  ~PrimaryRun() override;

  /// A multi-node job: takes the other agents' records from now on (RecordReceiver),
  /// listening where `address` is. Returns what the others need to find it (its
  /// endpoint and the run's name: ForwardingRun's `published`). Throws what the
  /// receiver throws.
  std::string serve_agents(const std::string& address);

  void record_job_event(const Event& e) override { record(e); }
  /// The run's end goes in; the stream thread ends meanwhile and complete() (or the
  /// destructor) runs the last pass on the caller's thread.
  void finished(const std::string& status, int exitcode, const std::string& root_cause) override;
  void complete() override;
  std::string job_run_dir() const override { return run_dir(); }

 private:
  IngestStats pass_streams(bool final) override;
  void describe(double created);
  void make_run();  // on the stream thread: run.db, which each pass folds into

  std::unique_ptr<RunOwnerLock> owner_lock_;  // held until ddprun exits
  // The stream thread's connection (null until it made the run, or when it could not).
  std::unique_ptr<RunStore> store_;
  std::unique_ptr<StreamIngester> ingester_;
  std::promise<void> made_;            // the stream thread tried to make the run
  std::shared_future<void> run_made_;  // made_'s: awaited before the receiver starts
  std::unique_ptr<RecordReceiver> receiver_;
  bool finishing_ = false;  // finished() was told: complete() runs the last pass
};

}  // namespace ddprun::tracking
