#include "agent/local_agent.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "agent/hang_publish.h"
#include "agent/hang_watch.h"
#include "agent/job_signals.h"
#include "agent/log_dir.h"
#include "agent/orphan_guard.h"
#include "agent/timer_watchdog.h"
#include "agent/worker_group_runner.h"
#include "common/clock.h"
#include "common/host.h"
#include "common/logging.h"
#include "net/socket.h"
#include "rendezvous/round_coordinator.h"
#include "tracking/run_observer.h"

namespace asio = boost::asio;

namespace ddprun::agent {

using rendezvous::RoundEnd;

// How long the nodes wait for each other's hang reports.
constexpr std::chrono::milliseconds kHangGatherTimeout{20'000};
// When the first tracking poll (and system sample) of an attempt comes at the latest.
constexpr std::chrono::milliseconds kFirstTrackingPoll{1000};
// How long a worker's death by a stop signal waits for ddprun's own copy before the
// other nodes are told of it as a failure.
constexpr std::chrono::milliseconds kStopSignalGrace{200};

class LocalAgent::Impl {
 public:
  Impl(AgentConfig config, AgentServices services)
      : config_(std::move(config)),
        io_(services.io),
        make_rendezvous_(std::move(services.make_rendezvous)),
        guard_(services.guard),
        observer_(services.observer),
        log_dir_(config_.log_dir, config_.run_id),
        host_(host_name()),
        clock_(services.clock),
        runner_(io_, config_, services.launcher, clock_, guard_, log_dir_, host_, observer_,
                services.inspector),
        hang_(config_, clock_, runner_, services.inspector, host_),
        watchdog_(config_.timer_file.empty()
                      ? nullptr
                      : std::make_unique<TimerWatchdog>(io_, clock_, config_.timer_file)),
        tracking_timer_(clock_.make_timer()),
        stop_grace_(clock_.make_timer()),
        signals_(io_, config_,
                 {[this](int sig) { on_stop_signal(sig); },
                  [this](int sig) { return runner_.forward(sig); }}) {}

  int run() {
    // Grandchildren orphaned by a dying worker are re-parented to us, so we can
    // reap them and nothing escapes the job.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    signals_.start();
    try {
      return run_rounds();
    } catch (const Signalled&) {
      return finish(128 + signalled_, "killed", "received " + signal_name(signalled_));
    }
  }

 private:
  struct Signalled {};  // a stop signal ended the rendezvous

  int run_rounds() {
    for (int round = 0;; ++round) {
      rendezvous::RendezvousInfo info = rendezvous(round);
      round = info.round;
      begin_round(info);
      if (signalled_ != 0) {
        // The signal came as the round completed: start nothing, and tell the others.
        end_round(signalled_end(info));
        return finish(128 + signalled_, "killed", "received " + signal_name(signalled_));
      }
      if (observer_) {
        observer_->rendezvous_complete(info.round, info.restart_count, info.world_size(),
                                       info.members);
      }
      run_attempt(info);
      if (over_ && over_->hang) report_hang(info);
      if (observer_) {
        observer_->poll(true);
        if (over_) {
          observer_->round_over(info.restart_count, RoundEnd::kind_name(over_->kind),
                                over_->reason);
        }
      }
      if (signalled_ != 0) {
        end_round(signalled_end(info));
        return finish(128 + signalled_, "killed", "received " + signal_name(signalled_));
      }
      const auto& failures = runner_.failures();
      if (!over_ && failures.empty()) {
        // This node is done; the job is done when every node is (a later failure
        // elsewhere still restarts everyone, this node included).
        over_ = wait_for_all_done(info);
        if (signalled_ != 0) {
          return finish(128 + signalled_, "killed", "received " + signal_name(signalled_));
        }
        if (!over_) return finish_success();
        if (over_->hang) report_hang(info);
      }
      if (!over_ || over_->kind == RoundEnd::Kind::kFinal) {
        return finish_failure(failures, over_.value_or(RoundEnd{}));
      }
      if (over_->kind == RoundEnd::Kind::kRestart) {
        spdlog::warn("worker group failed ({}); restarting, attempt {} of {}", over_->reason,
                     info.restart_count + 1, config_.spec.max_restarts);
      } else {
        spdlog::warn("membership changed ({}); re-rendezvous", over_->reason);
      }
    }
  }

  bool multi_node() const { return config_.max_nodes > 1; }

  // Joins the round on a helper thread while this thread keeps handling signals: a
  // Ctrl-C while other nodes are awaited cancels the join and ends ddprun (no worker
  // runs now). A round with no other node to wait for (a static job of one node, its
  // store on this host) is joined on the loop itself, at once. Throws what the join
  // threw; 128+signal ends the job.
  rendezvous::RendezvousInfo rendezvous(int round) {
    round_.reset();  // the last round's watches end before the next join
    auto join = [this, round] {
      if (!handler_) {
        auto handler = make_rendezvous_();
        if (observer_) {
          observer_->attach(handler->store(), multi_node() ? handler->connect() : nullptr,
                            handler->address(), handler->primary());
        }
        std::lock_guard lock(handler_mutex_);
        handler_ = std::move(handler);
        if (cancelled_) throw Error("rendezvous cancelled");
      }
      return handler_->next_rendezvous(round, config_.spec.local_world_size);
    };
    rendezvous::RendezvousInfo info = config_.join_at_once ? join() : join_on_a_thread(join);
    // A signal that came with the round may still wait in the loop: take it now, while
    // no worker runs, so that none starts.
    io_.poll();
    if (multi_node()) set_log_node_rank(info.group_rank);
    return info;
  }

  template <typename Join>
  rendezvous::RendezvousInfo join_on_a_thread(Join& join) {
    std::optional<rendezvous::RendezvousInfo> result;
    std::exception_ptr error;
    std::atomic<bool> finished{false};
    std::thread joiner([&] {
      try {
        result = join();
      } catch (...) {
        error = std::current_exception();
      }
      finished = true;
      asio::post(io_, [] {});  // wake the loop
    });
    while (!finished && signalled_ == 0) io_.run_one();
    if (!finished) {
      spdlog::warn("received {} while waiting for the other nodes", signal_name(signalled_));
      cancel_rendezvous();
      joiner.join();
      throw Signalled{};
    }
    joiner.join();
    if (error) std::rethrow_exception(error);
    return *result;
  }

  // Ends the join in progress: it throws soon. While the handler is still being built
  // it can only be connecting (with retries): every connect of the process gives up.
  void cancel_rendezvous() {
    std::lock_guard lock(handler_mutex_);
    cancelled_ = true;
    if (handler_) {
      handler_->cancel();
    } else {
      net::cancel_connects();
    }
  }

  WorkerGroup make_group(const rendezvous::RendezvousInfo& info) const {
    WorkerGroup g;
    g.group_rank = info.group_rank;
    g.group_world_size = info.group_world_size;
    g.master_addr = info.master_addr;
    g.master_port = info.master_port;
    g.use_agent_store = true;
    g.restart_count = info.restart_count;
    int base = info.rank_offset(info.group_rank);
    int world = info.world_size();
    for (int i = 0; i < config_.spec.local_world_size; ++i) {
      Worker w;
      w.local_rank = i;
      w.global_rank = base + i;
      w.role_rank = w.global_rank;
      w.world_size = world;
      w.role_world_size = world;
      g.workers.push_back(w);
    }
    return g;
  }

  // What this node tells the others when a stop signal ends the job.
  RoundEnd signalled_end(const rendezvous::RendezvousInfo& info) const {
    RoundEnd end{RoundEnd::Kind::kFinal, 128 + signalled_,
                 "node " + std::to_string(info.group_rank) + " (" + host_ + ") received " +
                     signal_name(signalled_)};
    end.signalled = true;
    return end;
  }

  // The round's protocol among the nodes, from its start to the end of the attempt.
  void begin_round(const rendezvous::RendezvousInfo& info) {
    over_.reset();
    dropped_ = false;
    self_ = static_cast<size_t>(info.group_rank) < info.members.size()
                ? info.members[static_cast<size_t>(info.group_rank)]
                : "";
    round_ = handler_->coordinate(info, io_, clock_);
  }

  void run_attempt(const rendezvous::RendezvousInfo& info) {
    bool done = false;
    round_->watch_end([this](RoundEnd end) { on_round_end(std::move(end)); },
                      [this](const std::string& what) { on_store_lost(what); });
    round_->watch_members(
        [this, info](const std::vector<std::string>& dead) { on_dead(info, dead); },
        [this](const std::string& what) { on_store_lost(what); });
    runner_.start(
        make_group(info), [this, info](const FailureRecord& f) { on_worker_failure(info, f); },
        [&done] { done = true; });
    if (observer_) poll_tracking(std::min(observer_->poll_interval(), kFirstTrackingPoll));
    if (config_.hang.enabled()) {
      hang_.start(
          [this, info](const Stall& stall) { on_hang(info, stall); },
          [this](std::chrono::milliseconds mine) {
            return std::chrono::milliseconds(round_->share_max("hang_longest_ms", mine.count()));
          });
    }
    if (watchdog_) runner_.watch_timers(*watchdog_);
    // A stack capture in progress ends before the attempt does.
    while (!done || hang_.capturing()) io_.run_one();
    await_stop_signal_after_stopped_workers();
    tell_pending_failure(info);
    hang_.stop();
    if (watchdog_) watchdog_->stop();
    tracking_timer_->cancel();
    round_->stop_watching_members();
    // A node whose workers all succeeded keeps watching for the round's end while it
    // waits for the others (wait_for_all_done); otherwise the watches end with the attempt.
    if (over_ || !runner_.failures().empty() || signalled_ != 0) round_->stop();
  }

  // Workers that died of a stop signal mostly got it from whoever stops the whole job
  // (scancel signals every process of the step, a shell its process group): ddprun's
  // own copy is given a moment to arrive, so that the job ends "killed" by the signal
  // rather than "failed" with a rank as its root cause.
  void await_stop_signal_after_stopped_workers() {
    const auto& failures = runner_.failures();
    if (signalled_ == 0 && !failures.empty() && is_stop_signal_death(failures.front().exitcode)) {
      signals_.await_stop(kStopSignalGrace);
    }
  }

  bool is_stop_signal_death(int exitcode) const {
    const auto& stops = config_.stop_signals;
    return std::find(stops.begin(), stops.end(), -exitcode) != stops.end();
  }

  // The same race seen from the other nodes: a worker that died of a stop signal is
  // told to them as a failure only when ddprun's own copy has not come within
  // kStopSignalGrace (or by the attempt's end), so that a job stopped everywhere at
  // once (scancel) ends "killed" on every node, not "failed" on those that heard first.
  void on_worker_failure(const rendezvous::RendezvousInfo& info, const FailureRecord& f) {
    if (signalled_ == 0 && is_stop_signal_death(f.exitcode)) {
      if (!pending_failure_) {
        pending_failure_ = f;
        stop_grace_->start(kStopSignalGrace, [this, info] { tell_pending_failure(info); });
      }
      return;
    }
    tell_failure(info, f);
  }

  void tell_pending_failure(const rendezvous::RendezvousInfo& info) {
    stop_grace_->cancel();
    if (!pending_failure_) return;
    FailureRecord f = *pending_failure_;
    pending_failure_.reset();
    if (signalled_ == 0 && !over_) tell_failure(info, f);
  }

  void tell_failure(const rendezvous::RendezvousInfo& info, const FailureRecord& f) {
    std::string what = "rank " + std::to_string(f.global_rank) + " (local_rank " +
                       std::to_string(f.local_rank) + ") on node " +
                       std::to_string(info.group_rank) + " (" + host_ + ") exited with " +
                       std::to_string(f.exitcode);
    bool budget_left = info.restart_count < config_.spec.max_restarts;
    end_round({budget_left ? RoundEnd::Kind::kRestart : RoundEnd::Kind::kFinal,
               shell_exit_code(f.exitcode), what});
    if (budget_left) round_->start_next_round(true, members(info));
  }

  // A worker made no progress for too long: the round ends as after a failure, but
  // every node first captures its workers' stacks (on_round_end).
  void on_hang(const rendezvous::RendezvousInfo& info, const Stall& stall) {
    if (over_) return;  // the round is ending already
    std::string what = "hang: " + hang_.describe(stall) + ", node " +
                       std::to_string(info.group_rank) + " (" + host_ + ")";
    spdlog::warn("{}; capturing the workers' stacks", what);
    bool budget_left = info.restart_count < config_.spec.max_restarts;
    RoundEnd mine{budget_left ? RoundEnd::Kind::kRestart : RoundEnd::Kind::kFinal, kHangExitCode,
                  what, true};
    end_round(mine);
    stop_workers(*over_);
    if (budget_left) round_->start_next_round(true, members(info));
  }

  // Ends the attempt's workers: after a hang, once their stacks are captured.
  void stop_workers(const RoundEnd& end) {
    if (!end.hang) return runner_.stop(SIGTERM);
    hang_part_ = "[]";
    hang_.capture([this](std::string part) {
      hang_part_ = std::move(part);
      runner_.stop(SIGTERM);
    });
  }

  // Every node shares what it captured; each judges the same reports alike, so every
  // node names the same culprit and takes the same decision on restarting.
  void report_hang(const rendezvous::RendezvousInfo& info) {
    while (hang_.capturing() && signalled_ == 0) io_.run_one();
    std::optional<std::vector<std::string>> parts;
    round_->gather("hang", hang_part_, kHangGatherTimeout,
                   [&parts](std::vector<std::string> p) { parts = std::move(p); });
    while (!parts && signalled_ == 0) io_.run_one();
    if (!parts) return;
    HangWatch::Verdict v = hang_.judge(*parts);
    std::string trigger = over_->reason;
    // From here on the job's root cause names the culprit (alike on every node).
    if (!v.diagnosis.headline.empty()) over_->reason = "hang: " + v.diagnosis.headline;
    std::string path = log_dir_.run_dir() + "/attempt_" + std::to_string(info.restart_count) +
                       "/hang_node" + std::to_string(info.group_rank) + ".txt";
    publish_hang(v, trigger, over_->reason, path, info.restart_count, observer_);
    log_dir_.keep();
    if (v.no_progress_limit) {
      over_ =
          RoundEnd{RoundEnd::Kind::kFinal, kNoProgressExitCode,
                   over_->reason + "; " + std::to_string(config_.hang.max_no_progress_restarts) +
                       " restart(s) in a row got no rank past the step where it hung before",
                   true};
    }
  }

  static std::set<std::string> members(const rendezvous::RendezvousInfo& info) {
    return {info.members.begin(), info.members.end()};
  }

  // Publishes why the round ends (the first writer wins) and adopts the winner.
  void end_round(const RoundEnd& mine) {
    if (!over_) over_ = unless_dropped(round_->end(mine));
  }

  // The end as it applies to this node: when the others went on without it (it was
  // frozen, or cut off from the rendezvous store), its workers belong to a world that no
  // longer exists; they stop now, before they reach a collective or write a
  // checkpoint, and the node leaves the job.
  RoundEnd unless_dropped(RoundEnd end) {
    if (!end.drops(self_)) return end;
    dropped_ = true;
    RoundEnd out{RoundEnd::Kind::kFinal, kDroppedExitCode,
                 "this node was dropped from the job: the other nodes heard no heartbeat from "
                 "it (frozen, or cut off from the rendezvous store) and went on without it; "
                 "its workers are stopped"};
    spdlog::error("{}", out.reason);
    return out;
  }

  void on_round_end(RoundEnd end) {
    if (over_) return;  // our own announcement, already adopted
    end = unless_dropped(std::move(end));
    if (!signalled_ && !runner_.idle()) spdlog::warn("stopping: {}", end.reason);
    over_ = std::move(end);
    stop_workers(*over_);
  }

  void on_store_lost(const std::string& what) {
    if (runner_.idle() || over_) return;
    spdlog::error("{}; stopping the workers", what);
    over_ = RoundEnd{RoundEnd::Kind::kFinal, 1, what};
    runner_.stop(SIGTERM);
  }

  // Elastic jobs: a member whose heartbeat stopped is dropped and the survivors go
  // on at the smaller size if that is still at least MIN (torchrun leaves them hanging).
  void on_dead(const rendezvous::RendezvousInfo& info, const std::vector<std::string>& dead) {
    if (over_) return;
    std::set<std::string> alive = members(info);
    std::string names;
    for (const auto& d : dead) {
      alive.erase(d);
      names += (names.empty() ? "" : ", ") + d;
    }
    int left = static_cast<int>(alive.size());
    bool enough = left >= config_.min_nodes;
    RoundEnd mine = enough ? RoundEnd{RoundEnd::Kind::kMembership, 0, "lost node(s) " + names}
                           : RoundEnd{RoundEnd::Kind::kFinal, 1,
                                      "lost node(s) " + names + ": " + std::to_string(left) +
                                          " node(s) left, at least " +
                                          std::to_string(config_.min_nodes) + " needed"};
    mine.dropped = dead;  // so that they learn it, should they come back
    end_round(mine);
    if (enough) round_->start_next_round(false, alive);
    runner_.stop(SIGTERM);
  }

  // A run is readable while the job runs: what workers wrote is ingested as it comes.
  // The first poll comes early (`first`), so that a short job has system metrics too.
  void poll_tracking(std::chrono::milliseconds first) {
    tracking_timer_->start(first, [this] {
      observer_->poll(false);
      poll_tracking(observer_->poll_interval());
    });
  }

  void on_stop_signal(int sig) {
    if (signalled_ != 0) {
      spdlog::warn("received {} again; killing the workers now", signal_name(sig));
      runner_.stop(SIGKILL);
      return;
    }
    signalled_ = sig;
    spdlog::warn("received {}; stopping {} worker(s)", signal_name(sig), runner_.running_workers());
    runner_.stop(sig);
  }

  int finish_success() {
    round_.reset();  // its watches' connections would keep the store waiting for them
    handler_->finish_job();
    log_dir_.remove_if_temporary();
    return finish(0, "finished", "");
  }

  // Marks this node done and waits until every node is, or the round ends anyway.
  std::optional<RoundEnd> wait_for_all_done(const rendezvous::RendezvousInfo& info) {
    std::optional<RoundEnd> lost;
    bool all_done = false;
    round_->finish_node([&all_done] { all_done = true; },
                        [&lost](const std::string& what) {
                          lost = RoundEnd{RoundEnd::Kind::kFinal, 1, what};
                        });
    std::unique_ptr<Timer> late = clock_.make_timer();
    auto after = config_.hang.straggler_warning;
    if (after.count() > 0) late->start(after, [this, &info] { name_unfinished(info); });
    // The attempt's watch on the round's end goes on: it sets over_.
    while (!all_done && !over_ && !lost && signalled_ == 0) io_.run_one();
    late->cancel();
    round_->stop();
    if (all_done) return std::nullopt;
    std::optional<RoundEnd> outcome = lost ? lost : over_;
    if (outcome && outcome->kind != RoundEnd::Kind::kFinal) {
      spdlog::warn("this node finished, but the round ended: {}", outcome->reason);
    }
    return outcome;
  }

  // The job-wide side of the straggler warning (the runner names a node's own): this
  // node's ranks all succeeded long ago and other nodes have not finished.
  void name_unfinished(const rendezvous::RendezvousInfo& info) {
    std::string nodes;
    for (int k : round_->unfinished()) {
      if (k == info.group_rank) continue;
      nodes += (nodes.empty() ? "" : ", ") + std::to_string(k);
      // Elastic rounds know their members' ids; a static one only their ranks.
      if (k < static_cast<int>(info.members.size()))
        nodes += " (" + info.members[static_cast<size_t>(k)] + ")";
    }
    if (nodes.empty()) return;
    spdlog::warn(
        "node(s) {} still running {} s after every rank of this node exited 0; if a rank "
        "there is stuck at its end (a deadlock tearing the process group down, a thread "
        "never joined), --hang_timeout stops it and shows where",
        nodes, config_.hang.straggler_warning.count() / 1000);
  }

  int finish_failure(const std::vector<FailureRecord>& failures, const RoundEnd& over) {
    if (over.signalled && !dropped_) {  // another node was told to stop the job
      std::cerr << "ddprun: the job was stopped: " << over.reason << "\n";
      return finish(over.exitcode, "killed", over.reason);
    }
    if (dropped_ || failures.empty()) {
      std::cerr << "ddprun: " << (dropped_ ? "" : "the job failed: ") << over.reason << "\n";
      return finish(over.exitcode, "failed", over.reason);
    }
    std::cerr << format_failure_summary(config_.spec.entrypoint_name, host_, failures)
              << std::flush;
    const FailureRecord& root = failures.front();
    return finish(shell_exit_code(root.exitcode), "failed",
                  "rank " + std::to_string(root.global_rank) + " (local_rank " +
                      std::to_string(root.local_rank) + ") on " + host_ + " exited with " +
                      std::to_string(root.exitcode));
  }

  int finish(int code, const std::string& status, const std::string& root_cause) {
    if (observer_) observer_->finished(status, code, root_cause);
    log_dir_.remove_if_temporary_and_unread();
    if (guard_) guard_->release();
    return code;
  }

  AgentConfig config_;
  asio::io_context& io_;
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
  // Set once by the joining thread (under the mutex), then used on the loop's thread.
  std::unique_ptr<rendezvous::RendezvousHandler> handler_;
  std::mutex handler_mutex_;
  bool cancelled_ = false;                               // guarded by handler_mutex_
  std::unique_ptr<rendezvous::RoundCoordinator> round_;  // of the attempt running
  std::unique_ptr<Timer> tracking_timer_;
  std::unique_ptr<Timer> stop_grace_;             // see on_worker_failure()
  std::optional<FailureRecord> pending_failure_;  // a stop signal's death, not told yet
  JobSignals signals_;
  std::optional<RoundEnd> over_;
  std::string self_;      // this node's id in the round running
  bool dropped_ = false;  // the others went on without this node
  int signalled_ = 0;
};

LocalAgent::LocalAgent(AgentConfig config, AgentServices services)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(services))) {}

LocalAgent::~LocalAgent() = default;

int LocalAgent::run() { return impl_->run(); }

}  // namespace ddprun::agent
