#pragma once

// LocalAgent's insides, shared by the files that implement it: local_agent.cc (the
// job's lifecycle: its rounds and their attempts), local_agent_preflight.cc (before a
// join), local_agent_round_start.cc (as a round forms), local_agent_end.cc (how the
// job ends: stop signals, the others told), local_agent_metrics.cc (what /metrics
// serves) and local_agent_waits.cc (the waits a stop signal cuts short). An attempt is
// an object of its own (agent/attempt.h), and so is each feature (docs/architecture.md);
// nothing but these files includes this.

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "agent/attempt.h"
#include "agent/goodput/goodput_spans.h"
#include "agent/hang/hang_watch.h"
#include "agent/hang/timer_watchdog.h"
#include "agent/job_end.h"
#include "agent/job_signals.h"
#include "agent/local_agent.h"
#include "agent/log_dir.h"
#include "agent/metrics/metrics_endpoint.h"
#include "agent/preflight/link_check.h"
#include "agent/preflight/node_preflight.h"
#include "agent/restart_progress.h"
#include "agent/shared_run/shared_run.h"
#include "agent/stop_state.h"
#include "agent/worker_group_runner.h"
#include "common/loop_condition.h"
#include "rendezvous/rendezvous_handler.h"

namespace ddprun::agent {

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

  // The rounds and their attempts (local_agent.cc).
  Task<int> run_job();
  Task<int> run_rounds();
  void enter(Phase phase);
  Task<rendezvous::RendezvousInfo> rendezvous(int round);
  Task<void> connect_rendezvous();
  void begin_round(const rendezvous::RendezvousInfo& info);
  Task<void> report_hang();
  // Before a join (local_agent_preflight.cc).
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
  // As a round forms (local_agent_round_start.cc).
  Task<void> probe_links();
  Task<void> tell_round_formed(const rendezvous::RendezvousInfo& info);
  // How the job ends (local_agent_end.cc).
  void on_stop_signal(int sig);
  Task<void> end_job(bool succeeded);
  Task<void> end_signalled_job();
  // What the metrics endpoint serves (local_agent_metrics.cc).
  JobMetrics metrics_figures();

  bool multi_node() const { return config_.max_nodes > 1; }

  AgentConfig config_;
  AgentServices services_;
  LogDir log_dir_;
  WorkerGroupRunner runner_;
  NodePreflight preflight_;
  GoodputSpans goodput_;
  HangWatch hang_;
  std::unique_ptr<TimerWatchdog> watchdog_;  // torchrun's worker watchdog, when asked for
  StopState stop_;
  JobSignals signals_;
  JobEnd end_;
  RestartProgress restarts_;  // crash loops: failed restarts in a row that got nowhere
  std::unique_ptr<rendezvous::RendezvousHandler> handler_;
  std::unique_ptr<Attempt> attempt_;          // the round's, from its start
  std::unique_ptr<LinkCheck> links_;          // with --preflight's link check
  std::unique_ptr<SharedRun> shared_run_;     // with a run, of a job of several nodes
  std::unique_ptr<MetricsEndpoint> metrics_;  // with --metrics_port
  // What the coroutine waits on: every handler that changes the state notifies it.
  LoopCondition changed_;
  Phase phase_ = Phase::kConnecting;
};

}  // namespace ddprun::agent
