#pragma once

// LocalAgent's insides, shared by the files that implement it (local_agent.cc: the
// rounds and the attempt; local_agent_round_end.cc: how a round ends, failures,
// signals and lost nodes; local_agent_hang.cc: a hang's stacks and verdict). Not part
// of the agent's interface: nothing else includes it.

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "agent/hang_watch.h"
#include "agent/job_signals.h"
#include "agent/local_agent.h"
#include "agent/log_dir.h"
#include "agent/timer_watchdog.h"
#include "agent/worker_group_runner.h"
#include "common/clock.h"
#include "net/wait_scope.h"
#include "rendezvous/rendezvous_handler.h"
#include "rendezvous/round_coordinator.h"
#include "tracking/run_observer.h"

namespace ddprun::agent {

using rendezvous::RoundEnd;

/// The agent of one node (see LocalAgent). Single-threaded: the loop's thread.
class LocalAgent::Impl {
 public:
  Impl(AgentConfig config, AgentServices services);
  int run();

 private:
  struct Signalled {};  // a stop signal ended the rendezvous

  // The rounds and the attempt (local_agent.cc).
  int run_rounds();
  rendezvous::RendezvousInfo rendezvous(int round);
  void connect_rendezvous();
  template <typename T>
  T await_on_loop(Task<T> task, const std::function<void()>& cancel);
  void run_until(const bool& finished, const std::function<void()>& cancel);
  WorkerGroup make_group(const rendezvous::RendezvousInfo& info) const;
  void begin_round(const rendezvous::RendezvousInfo& info);
  void run_attempt(const rendezvous::RendezvousInfo& info);
  void poll_tracking(std::chrono::milliseconds first);
  int finish_success();
  int finish_failure(const std::vector<FailureRecord>& failures, const RoundEnd& over);
  // Tells the observer, removes a temporary log directory (`succeeded`: whatever it
  // holds), releases the guard; returns `code`.
  int finish(int code, const std::string& status, const std::string& root_cause,
             bool succeeded = false);
  bool multi_node() const { return config_.max_nodes > 1; }

  // How a round ends: failures, signals, lost nodes, the end of the job
  // (local_agent_round_end.cc).
  RoundEnd signalled_end(const rendezvous::RendezvousInfo& info) const;
  void await_stop_signal_after_stopped_workers();
  bool is_stop_signal_death(int exitcode) const;
  void on_worker_failure(const rendezvous::RendezvousInfo& info, const FailureRecord& f);
  void tell_pending_failure(const rendezvous::RendezvousInfo& info);
  void tell_failure(const rendezvous::RendezvousInfo& info, const FailureRecord& f);
  static std::set<std::string> members(const rendezvous::RendezvousInfo& info);
  void end_round(const RoundEnd& mine);
  RoundEnd unless_dropped(RoundEnd end);
  void on_round_end(RoundEnd end);
  void on_store_lost(const std::string& what);
  void on_dead(const rendezvous::RendezvousInfo& info, const std::vector<std::string>& dead);
  void on_stop_signal(int sig);
  std::optional<RoundEnd> wait_for_all_done(const rendezvous::RendezvousInfo& info);
  void name_unfinished(const rendezvous::RendezvousInfo& info);

  // A hang (local_agent_hang.cc).
  void on_hang(const rendezvous::RendezvousInfo& info, const Stall& stall);
  void stop_workers(const RoundEnd& end);
  void report_hang(const rendezvous::RendezvousInfo& info);

  AgentConfig config_;
  boost::asio::io_context& io_;
  AgentServices::RendezvousFactory make_rendezvous_;
  OrphanGuard* guard_;
  tracking::RunObserver* observer_;
  LogDir log_dir_;
  std::string host_;
  Clock& clock_;
  WorkerGroupRunner runner_;
  HangWatch hang_;
  std::unique_ptr<TimerWatchdog> watchdog_;  // torchrun's worker watchdog, when asked for
  std::string hang_part_;                    // this node's hang reports (JSON), to share
  JobSignals signals_;
  // The quick store requests made between the loop's waits give way to a stop signal,
  // and once one came, the last words to the other nodes are bounded (kLastWordsWait).
  // Declared before the rendezvous: its destructor's requests are bounded too.
  net::WaitScope waits_;
  std::unique_ptr<rendezvous::RendezvousHandler> handler_;
  std::unique_ptr<rendezvous::RoundCoordinator> round_;  // of the attempt running
  std::unique_ptr<Timer> tracking_timer_;
  std::unique_ptr<Timer> stop_grace_;             // see on_worker_failure()
  std::optional<FailureRecord> pending_failure_;  // a stop signal's death, not told yet
  std::optional<RoundEnd> over_;
  std::string self_;      // this node's id in the round running
  bool dropped_ = false;  // the others went on without this node
  int signalled_ = 0;
};

}  // namespace ddprun::agent
