#pragma once

// One attempt of the job on this node: a round's workers from their start to the end
// of the round, and how that end is decided among the nodes (a failure, a hang, a lost
// node or store, a straggler left out, a stop signal). Made by the agent for each round
// and destroyed with the next, so nothing of an earlier one carries over. The loop's
// handlers record here what happened and act where waiting would cost the job (a round's
// end stops the workers, a lost member ends the round); the agent's lifecycle
// (local_agent.cc) decides what follows the attempt.

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/agent_config.h"
#include "agent/failure_summary.h"
#include "agent/goodput/goodput_spans.h"
#include "agent/hang/hang_watch.h"
#include "agent/job_signals.h"
#include "agent/log_dir.h"
#include "agent/restart_progress.h"
#include "agent/spares/spare_watch.h"
#include "agent/stop_state.h"
#include "agent/straggler/straggler_watch.h"
#include "agent/worker_group_runner.h"
#include "common/clock.h"
#include "common/loop_condition.h"
#include "rendezvous/rendezvous_handler.h"
#include "rendezvous/round/round_coordinator.h"
#include "tracking/run_observer.h"

namespace ddprun::agent {

using rendezvous::RoundEnd;

/// Whether a worker's `exitcode` is its death by one of ddprun's stop signals.
bool is_stop_signal_death(const AgentConfig& config, int exitcode);

/// What an attempt uses of its job's: each part outlives every attempt.
struct AttemptContext {
  const AgentConfig& config;
  const std::string& host;
  Clock& clock;
  WorkerGroupRunner& runner;
  GoodputSpans& goodput;
  HangWatch& hang;
  RestartProgress& restarts;  // crash loops, over the job's attempts
  JobSignals& signals;
  const StopState& stop;
  LogDir& log_dir;
  tracking::RunObserver* observer;  // may be null
  // What the agent's coroutine waits on: every handler that changes the state notifies it.
  LoopCondition& changed;
};

class Attempt {
 public:
  Attempt(rendezvous::RendezvousInfo info, std::string self,
          std::unique_ptr<rendezvous::RoundCoordinator> round, AttemptContext context);
  Attempt(const Attempt&) = delete;
  Attempt& operator=(const Attempt&) = delete;

  rendezvous::RoundCoordinator& round() { return *round_; }
  /// Ends the round's watches and requests (before the next join, or as the job ends).
  void close_round();

  /// Starts `group` and runs it until the round's end is agreed (or this node's workers
  /// all succeeded: the others may still run).
  Task<void> run(WorkerGroup group);
  /// This node's workers all succeeded: marks the node done and waits until every node
  /// is (nullopt), or the round ends anyway (its end).
  Task<std::optional<RoundEnd>> wait_for_all_done();
  /// After a hang: every node's stacks gathered, judged by group rank 0, its verdict
  /// taken by every node (the round's end then names the culprit).
  Task<void> report_hang();
  /// A stop signal ends the job: the others are told why.
  Task<void> end_signalled();

  /// The round ends: why is known, or is being agreed (this node told its end).
  bool ending() const { return decided || proposed_; }
  /// The job failed before a stop signal came (which only hurried its end): the
  /// failure is the job's outcome.
  bool failed_before_signal() const {
    return ending_when_signalled && decided && decided->kind == RoundEnd::Kind::kFinal &&
           !decided->signalled;
  }

  const rendezvous::RendezvousInfo info;
  const std::string self;                      // this node's id in the round
  std::optional<RoundEnd> decided;             // why the round ends, once known (the winner)
  bool ending_when_signalled = false;          // the round was ending when a stop signal came
  bool dropped = false;                        // the others went on without this node
  bool store_lost = false;                     // the rendezvous store stopped answering
  bool all_done = false;                       // every node's workers succeeded
  std::unique_ptr<SpareWatch> spares;          // from the round's forming
  std::unique_ptr<StragglerWatch> stragglers;  // from the workers' start

 private:
  // How long a worker's death by a stop signal waits for ddprun's own copy before the
  // other nodes are told of it as a failure.
  static constexpr std::chrono::milliseconds kStopSignalGrace{200};

  // The round after this one, begun as this one ends (see end_round()).
  struct NextRound {
    bool failure = false;        // it counts as a restart
    std::set<std::string> lost;  // members no longer believed alive
  };
  // How many nodes the job would have without some members.
  struct NodesWithout {
    std::set<std::string> out;  // the members left out
    int left = 0;               // the members still in
    int spares = 0;
  };

  // A worker's failure, told to the others (attempt_end.cc).
  void on_worker_failure(const FailureRecord& f);
  void tell_pending_failure();
  void tell_failure(const FailureRecord& f);
  bool crash_loop();
  // The round's end, agreed among the nodes (attempt_end.cc).
  void end_round(const RoundEnd& mine, std::optional<NextRound> next = std::nullopt);
  void adopt_winner(RoundEnd winner);
  Task<void> await_winner();
  RoundEnd unless_dropped(RoundEnd end);
  void on_round_end(RoundEnd end);
  void on_store_lost(const std::string& what);
  RoundEnd signalled_end() const;
  // Nodes that leave: lost, or a straggler left out (attempt_members.cc).
  void on_dead(const std::vector<std::string>& dead);
  void count_without(const std::vector<std::string>& out,
                     const std::function<void(const NodesWithout&)>& then);
  void end_round_without(const std::vector<std::string>& out, std::string lost,
                         const NodesWithout& w);
  void exclude_straggler(const StragglerJudge::Score& worst, const std::string& member);
  void say_unfinished(const std::vector<int>& unfinished);
  // A hang (attempt_hang.cc).
  void on_hang(const Stall& stall);
  void stop_workers(const RoundEnd& end);

  AttemptContext c_;
  std::unique_ptr<rendezvous::RoundCoordinator> round_;  // before what watches it
  std::unique_ptr<Timer> stop_grace_;                    // see on_worker_failure()
  std::optional<RoundEnd> proposed_;  // this node's end, told the others: winner not known yet
  bool workers_done_ = false;         // every worker has exited
  std::optional<FailureRecord> pending_failure_;  // a stop signal's death, not told yet
  std::optional<RoundEnd> lost_;                  // the store lost while waiting for the others
  bool progress_judged_ = false;                  // its failure was counted for crash loops
  std::string hang_part_;                         // this node's hang reports (JSON)
  std::optional<std::vector<std::string>> hang_parts_;  // every node's, once gathered (judging)
  std::optional<std::string> hang_verdict_;  // what the judging node shared, once it came
};

}  // namespace ddprun::agent
