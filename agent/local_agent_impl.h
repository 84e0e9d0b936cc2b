#pragma once

// LocalAgent's insides, shared by the files that implement it: local_agent.cc (the
// lifecycle: the rounds and the attempt), local_agent_preflight.cc (before a join),
// local_agent_round_start.cc (as a round forms), local_agent_round_end.cc (how a round
// ends: failures, signals, lost nodes, the end of the job), local_agent_hang.cc (a
// hang's stacks and verdict), local_agent_metrics.cc (what /metrics serves) and
// local_agent_waits.cc (the waits a stop signal cuts short). Each feature is a
// component of its own (docs/architecture.md); nothing but these files includes this.

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "agent/goodput/goodput_spans.h"
#include "agent/hang/hang_watch.h"
#include "agent/hang/timer_watchdog.h"
#include "agent/job_signals.h"
#include "agent/local_agent.h"
#include "agent/log_dir.h"
#include "agent/metrics/metrics_endpoint.h"
#include "agent/preflight/link_check.h"
#include "agent/preflight/node_preflight.h"
#include "agent/restart_progress.h"
#include "agent/shared_run/shared_run.h"
#include "agent/spares/spare_watch.h"
#include "agent/straggler/straggler_watch.h"
#include "agent/worker_group_runner.h"
#include "common/clock.h"
#include "common/loop_condition.h"
#include "rendezvous/rendezvous_handler.h"
#include "rendezvous/round_coordinator.h"
#include "tracking/run_observer.h"

namespace ddprun::agent {

using rendezvous::RoundEnd;

/// One attempt: a round's workers from their start to the end of the round. Made
/// fresh for each round, so nothing of an earlier one carries over. The loop's
/// handlers record here what happened; the agent's coroutine decides what follows.
struct Attempt {
  Attempt(rendezvous::RendezvousInfo i, std::string node_id);

  rendezvous::RendezvousInfo info;
  std::string self;                              // this node's id in the round
  std::optional<RoundEnd> decided;               // why the round ends, once known (the winner)
  std::optional<RoundEnd> proposed;    // this node's end, told the others: the winner not known yet
  bool ending_when_signalled = false;  // the round was ending when a stop signal came
  bool dropped = false;                          // the others went on without this node
  bool store_lost = false;                       // the rendezvous store stopped answering
  bool workers_done = false;                     // every worker has exited
  std::optional<FailureRecord> pending_failure;  // a stop signal's death, not told yet
  std::string hang_part;                         // this node's hang reports (JSON)
  // Once this node's workers all succeeded: every node is done, or the store was lost.
  bool all_done = false;
  std::optional<RoundEnd> lost;
  std::unique_ptr<SpareWatch> spares;                  // from the round's forming
  std::unique_ptr<StragglerWatch> stragglers;          // from the workers' start
  std::optional<std::vector<std::string>> hang_parts;  // every node's, once gathered (judging)
  std::optional<std::string> hang_verdict;             // what the judging node shared, once it came
  bool progress_judged = false;    // its failure was counted for crash loops

  /// The round ends: why is known, or is being agreed (this node told its end).
  bool ending() const { return decided || proposed; }
  /// The job failed before a stop signal came (which only hurried its end): the
  /// failure is the job's outcome.
  bool failed_before_signal() const {
    return ending_when_signalled && decided && decided->kind == RoundEnd::Kind::kFinal &&
           !decided->signalled;
  }
};

/// The agent of one node (see LocalAgent). Single-threaded: the loop's thread. Its
/// life is one coroutine, run_job() (its rounds, then leaving), on the one loop; the
/// phases it goes through are LocalAgent::Phase.
class LocalAgent::Impl {
 public:
  Impl(AgentConfig config, AgentServices services);
  int run();

 private:
  struct Signalled {};  // a stop signal ended the rendezvous
  struct Unfit {        // the node failed its preflight once it reached the others
    int code;
  };

  // The rounds and the attempt (local_agent.cc).
  Task<int> run_job();
  Task<int> run_rounds();
  void enter(Phase phase);
  Task<rendezvous::RendezvousInfo> rendezvous(int round);
  Task<void> connect_rendezvous();
  Task<std::optional<int>> unfit_node();
  Task<std::optional<std::string>> unfit_clock();
  Task<void> tell_unfit(const std::string& cause);
  // Awaits `task`, a wait for the other nodes; the first stop signal meanwhile calls
  // `cancel` (which ends the task's wait at once) and ends the job: Signalled once the
  // task has ended. Returns its value or throws what it threw. Defined, for the types
  // the agent awaits, in local_agent_waits.cc: apart from its callers (GCC 12's rule,
  // docs/contributing.md).
  template <typename T>
  Task<T> unless_signalled(Task<T> task, std::function<void()> cancel);
  Task<void> unless_signalled(Task<void> task, std::function<void()> cancel);
  WorkerGroup make_group(const rendezvous::RendezvousInfo& info) const;
  void begin_round(const rendezvous::RendezvousInfo& info);
  // As a round forms (local_agent_round_start.cc).
  Task<void> probe_links();
  Task<void> tell_round_formed(const rendezvous::RendezvousInfo& info);
  Task<void> run_attempt();
  int finish_success();
  int finish_failure(const std::vector<FailureRecord>& failures, const RoundEnd& over);
  int finish_signalled();
  int finish_spare(const rendezvous::SpareNotNeeded& ended);
  static void say_quarantined(const rendezvous::RendezvousInfo& info);
  // Tells the observer, removes a temporary log directory (`succeeded`: whatever it
  // holds), releases the guard; returns `code`.
  int finish(int code, const std::string& status, const std::string& root_cause,
             bool succeeded = false);
  bool multi_node() const { return config_.max_nodes > 1; }

  // How a round ends: failures, signals, lost nodes, the end of the job
  // (local_agent_round_end.cc).
  RoundEnd signalled_end() const;
  Task<void> await_stop_signal_after_stopped_workers();
  bool is_stop_signal_death(int exitcode) const;
  void on_worker_failure(const FailureRecord& f);
  void tell_pending_failure();
  void tell_failure(const FailureRecord& f);
  bool crash_loop();
  // The round after this one, begun as this one ends (see end_round()).
  struct NextRound {
    bool failure = false;        // it counts as a restart
    std::set<std::string> lost;  // members no longer believed alive
  };
  void end_round(const RoundEnd& mine, std::optional<NextRound> next = std::nullopt);
  void adopt_winner(RoundEnd winner);
  Task<void> await_winner();
  Task<void> end_job(bool succeeded);
  Task<void> end_signalled_job();
  RoundEnd unless_dropped(RoundEnd end);
  void on_round_end(RoundEnd end);
  void on_store_lost(const std::string& what);
  void on_dead(const std::vector<std::string>& dead);
  struct NodesWithout {
    std::set<std::string> out;  // the members left out
    int left = 0;               // the members still in
    int spares = 0;
  };
  void count_without(const std::vector<std::string>& out,
                     const std::function<void(const NodesWithout&)>& then);
  void end_round_without(const std::vector<std::string>& out, std::string lost,
                         const NodesWithout& w);
  void exclude_straggler(const StragglerJudge::Score& worst, const std::string& member);
  void on_stop_signal(int sig);
  Task<std::optional<RoundEnd>> wait_for_all_done();
  void name_unfinished();
  void say_unfinished(const std::vector<int>& unfinished);

  // What the metrics endpoint serves (local_agent_metrics.cc).
  JobMetrics metrics_figures();

  // A hang (local_agent_hang.cc).
  void on_hang(const Stall& stall);
  void stop_workers(const RoundEnd& end);
  Task<void> report_hang();

  AgentConfig config_;
  boost::asio::io_context& io_;
  AgentServices::RendezvousFactory make_rendezvous_;
  decltype(AgentServices::tell_unfit) tell_unfit_;
  OrphanGuard* guard_;
  tracking::RunObserver* observer_;
  LogDir log_dir_;
  std::string host_;
  Clock& clock_;
  WorkerGroupRunner runner_;
  NodePreflight preflight_;
  GoodputSpans goodput_;
  HangWatch hang_;
  std::unique_ptr<TimerWatchdog> watchdog_;  // torchrun's worker watchdog, when asked for
  JobSignals signals_;
  std::unique_ptr<rendezvous::RendezvousHandler> handler_;
  std::unique_ptr<rendezvous::RoundCoordinator> round_;  // of the attempt running
  std::unique_ptr<Attempt> attempt_;                     // the round's, from its start
  std::unique_ptr<Timer> stop_grace_;  // see on_worker_failure()
  std::unique_ptr<Timer> stop_deadline_;  // after a stop signal: how long the others are told
  bool stop_deadline_passed_ = false;
  CancelSignal after_stop_cancel_{"no answer while stopping"};  // cancelled then
  std::unique_ptr<LinkCheck> links_;                            // with --preflight's link check
  std::unique_ptr<SharedRun> shared_run_;     // with a run, of a job of several nodes
  std::unique_ptr<MetricsEndpoint> metrics_;  // with --metrics_port
  uint64_t hangs_ = 0;
  RestartProgress restarts_;  // crash loops: failed restarts in a row that got nowhere
  // What the coroutine waits on: every handler that changes the state notifies it.
  LoopCondition changed_;
  std::function<void()> cancel_wait_;  // ends the wait for the other nodes in progress
  Phase phase_ = Phase::kConnecting;
  int signalled_ = 0;
};

}  // namespace ddprun::agent
