#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "agent/agent_config.h"
#include "agent/failure_summary.h"
#include "agent/worker.h"
#include "common/cancel_signal.h"
#include "common/clock.h"
#include "os/signal_source.h"
#include "rendezvous/rendezvous_handler.h"
#include "tracking/run_observer.h"

namespace ddprun::agent {

/// Exit status of an agent whose node the others dropped from an elastic job (no
/// heartbeat from it: frozen, or cut off) while the job went on without it.
constexpr int kDroppedExitCode = 123;

class ProcessLauncher;
class ProcessInspector;
class OrphanGuard;
class NodeProbe;

/// What an agent runs on: the OS in production, fakes in tests. Everything here
/// must outlive the agent.
struct AgentServices {
  using RendezvousFactory =
      std::function<Task<std::unique_ptr<rendezvous::RendezvousHandler>>(CancelSignal&)>;

  boost::asio::io_context& io;  // the agent's one loop
  ProcessLauncher& launcher;    // built on `io`
  Clock& clock;                 // timers on `io`
  /// Makes the job's rendezvous (connecting or hosting as it is made): a coroutine on
  /// the loop, once, before the first round; a stop signal cancels it.
  RendezvousFactory make_rendezvous;
  OrphanGuard* guard = nullptr;               // may be null
  tracking::RunObserver* observer = nullptr;  // the job's tracking run; may be null
  /// Looks into workers (state, CPU, stacks) for hang detection; may be null.
  ProcessInspector* inspector = nullptr;
  /// Where the signals to ddprun come from; null: the kernel's (os::process_signals()).
  os::SignalSource* signals = nullptr;
  /// What preflight reads of the node; null: this machine (PosixNodeProbe).
  NodeProbe* probe = nullptr;
  /// Tells the other nodes why this one stays out when its preflight fails before the
  /// first join (rendezvous::tell_unfit()): a coroutine on the loop; a stop signal
  /// cancels it. Null: nobody is told (a job of one node, tests).
  std::function<Task<void>(std::string reason, CancelSignal&)> tell_unfit;
};

/// Runs one node's workers to the end of the job: spawns them with torchrun's
/// environment, supervises them in one Asio loop driven by SIGCHLD (never polling),
/// routes their output, stops the group on the first failure (SIGTERM, grace period,
/// SIGKILL), restarts it within the budget, forwards the stop signals and those passed
/// on while the job goes on (agent/job_signals.h), and prints torchrun's failure
/// summary. With hang detection on, a worker that makes
/// no progress ends the round like a failure, after every node has captured its
/// workers' stacks; the culprit is named on the console, in the log directory and in
/// the run.
///
/// Exit code of run(): 0 if every worker exited 0; the root-cause worker's code
/// (128+N for signal N) on failure; 128+S when ddprun received signal S.
/// Single-threaded: construct and run on the loop's thread; nothing else may run the
/// loop meanwhile. Catches the configured signals (by default SIGINT, SIGTERM, SIGHUP,
/// SIGQUIT, SIGUSR1 and SIGUSR2) from construction on.
///
/// The agent's life is one coroutine on the one loop, through these phases:
///
///   kConnecting --> kJoining --> kRunning --+--> kAwaitingOthers --> kDone (exit 0)
///                      ^                    |          |
///                      |                    v          v
///                      +--- restart or -- kReportingHang (a hang: every node's
///                           membership        stacks gathered and judged alike)
///                           change            |
///                                             +--> kDone (the round's end is final)
///
/// kConnecting: the rendezvous handler reaches or hosts its store. kJoining: the
/// nodes agree on ranks. kRunning: the workers run; the round ends on a failure, a
/// hang, a lost node or store, or a stop signal. kAwaitingOthers: this node's workers
/// all succeeded; the job is done once every node's are (a later failure elsewhere
/// still restarts everyone). A stop signal in any phase ends the job (128+signal)
/// once the workers are stopped and the others told. The loop's handlers (workers'
/// exits, the round's watches, signals, timers) record what happened in the attempt;
/// the coroutine moves from one phase to the next and decides what follows an
/// attempt. A few handlers act at once where waiting would cost the job: a round's end
/// stops the workers, a lost member ends the round, a stop signal stops the workers and
/// cancels the wait in progress (its console line names the phase). The phase is the
/// agent's own state, logged at debug level as it changes; each feature is a component
/// (docs/architecture.md).
class LocalAgent {
 public:
  enum class Phase { kConnecting, kJoining, kRunning, kReportingHang, kAwaitingOthers, kDone };

  LocalAgent(AgentConfig config, AgentServices services);
  ~LocalAgent();

  int run();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ddprun::agent
