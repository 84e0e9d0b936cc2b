#include "agent/local_agent_impl.h"
#include "rendezvous/host_clock.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <iostream>
#include <utility>

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>

#include "agent/orphan_guard.h"
#include "agent/worker_env.h"
#include "common/host.h"
#include "common/logging.h"
#include "rendezvous/rendezvous_factory.h"

namespace asio = boost::asio;

namespace ddprun::agent {
namespace {

// Whether the workers' directories hold error files only: no redirected logs, no hang
// reports, stack or flight recorder dumps, filtered lines (which may be large).
bool only_small_files(const AgentConfig& c) {
  return c.spec.redirects.none() && c.spec.tee.none() && !c.hang.enabled() &&
         c.timer_file.empty() && c.spec.duplicate_stdout_filters.empty() &&
         c.spec.duplicate_stderr_filters.empty();
}

}  // namespace

LocalAgent::Impl::Impl(AgentConfig config, AgentServices services)
    : config_(std::move(config)),
      io_(services.io),
      make_rendezvous_(std::move(services.make_rendezvous)),
      tell_unfit_(std::move(services.tell_unfit)),
      guard_(services.guard),
      observer_(services.observer),
      log_dir_(config_.log_dir, config_.run_id, only_small_files(config_)),
      host_(host_name()),
      clock_(services.clock),
      runner_(io_, config_, services.launcher, clock_, guard_, log_dir_, host_, observer_,
              services.inspector),
      preflight_(config_.preflight, services.probe, host_),
      goodput_(config_.spec.local_world_size, config_.checkpoint_dir, runner_, clock_, observer_,
               [] { return static_cast<double>(rendezvous::wall_clock_ms()) / 1000; }),
      hang_(config_, clock_, runner_, services.inspector, host_),
      watchdog_(config_.timer_file.empty()
                    ? nullptr
                    : std::make_unique<TimerWatchdog>(io_, clock_, config_.timer_file)),
      signals_(io_, config_,
               {[this](int sig) {
                  on_stop_signal(sig);
                  changed_.notify();
                },
                [this](int sig) { return runner_.forward(sig); }},
               services.signals ? *services.signals : os::process_signals()),
      stop_grace_(clock_.make_timer()),
      stop_deadline_(clock_.make_timer()),
      shared_run_(observer_ && multi_node()
                      ? std::make_unique<SharedRun>(*observer_, config_.run_id)
                      : nullptr),
      changed_(io_) {
  const auto& checks = config_.preflight.checks;
  if (std::find(checks.begin(), checks.end(), Check::kLink) != checks.end()) {
    links_ = std::make_unique<LinkCheck>(io_, observer_);
  }
}

Attempt::Attempt(rendezvous::RendezvousInfo i, std::string node_id)
    : info(std::move(i)), self(std::move(node_id)) {}

// The whole job is one coroutine on the loop, and the loop runs once: until it ends.
int LocalAgent::Impl::run() {
  // Grandchildren orphaned by a dying worker are re-parented to us, so we can
  // reap them and nothing escapes the job.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  signals_.start();
  if (config_.metrics.port) {
    metrics_ = std::make_unique<MetricsEndpoint>(io_, config_, runner_, clock_,
                                                 [this] { return metrics_figures(); });
  }
  if (log_dir_.temporary() && !(config_.spec.redirects.none() && config_.spec.tee.none())) {
    spdlog::warn(
        "worker logs (--redirects/--tee) go to {}, a temporary directory removed after a "
        "successful job (--log_dir keeps them)",
        log_dir_.run_dir());
  }
  int code = 0;
  std::exception_ptr error;
  asio::co_spawn(io_, run_job(), [&](const std::exception_ptr& e, int c) {
    error = e;
    code = c;
    io_.stop();  // what is left on the loop (the signals' watches, ...) ends with the agent
  });
  try {
    io_.run();
    if (error) std::rethrow_exception(error);
    return code;
  } catch (const Signalled&) {
    return finish_signalled();
  }
}

void LocalAgent::Impl::enter(Phase phase) {
  static constexpr const char* kNames[] = {"connecting", "joining",          "running",
                                           "reporting a hang", "awaiting the others", "done"};
  spdlog::debug("agent: {} -> {}", kNames[static_cast<int>(phase_)], kNames[static_cast<int>(phase)]);
  phase_ = phase;
}

// The job on this node: its rounds, then, however they ended, the node leaves the
// rendezvous (the last thing it asks of it).
Task<int> LocalAgent::Impl::run_job() {
  int code = 0;
  std::exception_ptr error;
  try {
    code = co_await run_rounds();
  } catch (...) {
    error = std::current_exception();
  }
  if (handler_) co_await handler_->leave(after_stop_cancel_);
  if (error) std::rethrow_exception(error);
  co_return code;
}

Task<int> LocalAgent::Impl::run_rounds() {
  // torchrun's banner, said as this node's first workers start (its preflight passed).
  bool omp_banner_due = !config_.omp_num_threads.empty();
  for (int round = 0;; ++round) {
    if (auto code = co_await unfit_node()) co_return *code;
    rendezvous::RendezvousInfo info;
    try {
      info = co_await rendezvous(round);
    } catch (const rendezvous::SpareNotNeeded& e) {
      co_return finish_spare(e);
    } catch (const Unfit& unfit) {
      co_return unfit.code;
    }
    round = info.round;
    begin_round(info);
    if (signalled_ == 0 && links_) co_await probe_links();
    if (metrics_) metrics_->share(info, attempt_->self, host_, *round_);
    if (signalled_ != 0) {
      // The signal came as the round completed: start nothing, and tell the others.
      co_await end_signalled_job();
      co_return finish_signalled();
    }
    if (observer_) co_await tell_round_formed(info);
    if (std::exchange(omp_banner_due, false)) std::cerr << omp_banner(config_.omp_num_threads);
    enter(Phase::kRunning);
    co_await run_attempt();
    if (attempt_->decided && attempt_->decided->hang) co_await report_hang();
    if (observer_) {
      observer_->attempt_ended();
      if (attempt_->decided) {
        observer_->round_over(info.restart_count, RoundEnd::kind_name(attempt_->decided->kind),
                              attempt_->decided->reason);
      }
    }
    if (signalled_ != 0 && !attempt_->failed_before_signal()) {
      co_await end_signalled_job();
      co_return finish_signalled();
    }
    const auto& failures = runner_.failures();
    if (!attempt_->decided && failures.empty()) {
      // This node is done; the job is done when every node is (a later failure
      // elsewhere still restarts everyone, this node included).
      enter(Phase::kAwaitingOthers);
      attempt_->decided = co_await wait_for_all_done();
      if (attempt_->decided) goodput_.round_ends();
      if (signalled_ != 0) {
        // Stopped while the others still run: they are told, as from a running round.
        if (!attempt_->decided && !attempt_->all_done) co_await end_signalled_job();
        co_return finish_signalled();
      }
      if (!attempt_->decided) {
        co_await end_job(true);
        co_return finish_success();
      }
      if (attempt_->decided->hang) co_await report_hang();
    }
    const std::optional<RoundEnd>& over = attempt_->decided;
    if (!over || over->kind == RoundEnd::Kind::kFinal) {
      // The job is over for every node (a dropped node's is not): spares waiting leave.
      // A store that stopped answering is not asked again.
      if (!attempt_->dropped && !attempt_->store_lost) co_await end_job(false);
      co_return finish_failure(failures, over.value_or(RoundEnd{}));
    }
    if (over->kind == RoundEnd::Kind::kRestart) {
      spdlog::warn("worker group failed ({}); restarting, attempt {} of {}", over->reason,
                   info.restart_count + 1, config_.spec.max_restarts);
    } else {
      spdlog::warn("membership changed ({}); re-rendezvous", over->reason);
    }
  }
}

// Joins the round. A Ctrl-C meanwhile cancels the join and ends ddprun (no worker runs
// now). Throws what the join threw; 128+signal ends the job.
Task<rendezvous::RendezvousInfo> LocalAgent::Impl::rendezvous(int round) {
  round_.reset();  // the last round's watches end before the next join
  // What the last round left queued on the loop (its cancelled waits) runs before the
  // join's first request, as when the join was a coroutine of its own: a join begun
  // ahead of them was seen to hang on the store (Elastic.NodeThatFinished...).
  co_await asio::post(io_, asio::use_awaitable);
  if (!handler_) {
    co_await connect_rendezvous();
    auto unfit = co_await unfit_clock();
    if (auto cause = unfit) {
      co_await handler_->keep_out(*cause, after_stop_cancel_);
      throw Unfit{finish(kPreflightExitCode, "failed", *cause)};
    }
  }
  enter(Phase::kJoining);
  auto info = co_await unless_signalled(
      handler_->next_rendezvous(round, config_.spec.local_world_size),
      [this] { handler_->cancel(); });
  // A signal that came with the round may not be handled yet: take it now, while no
  // worker runs, so that none starts.
  signals_.take_pending();
  if (multi_node()) set_log_node_rank(info.group_rank);
  if (info.from_spare) {
    notice("this node, a hot spare, takes a place in round {}: group rank {} of {} node(s)",
           info.round, info.group_rank, info.group_world_size);
  }
  co_return info;
}

// Makes the rendezvous handler, which hosts or connects to the rendezvous store: a
// store that is not up yet is waited for on the loop, and a Ctrl-C meanwhile cancels
// that wait at once.
Task<void> LocalAgent::Impl::connect_rendezvous() {
  CancelSignal cancel("rendezvous cancelled");
  // Said as the wait becomes cancellable (the same turn of the loop): a signal from here
  // on ends the wait for the other nodes.
  spdlog::debug("agent: reaching the rendezvous");
  handler_ = co_await unless_signalled(make_rendezvous_(cancel), [&cancel] { cancel.cancel(); });
  if (shared_run_) {
    CancelSignal publishing("publishing the run cancelled");
    co_await unless_signalled(shared_run_->publish(*handler_, publishing),
                              [&publishing] { publishing.cancel(); });
  }
}

WorkerGroup LocalAgent::Impl::make_group(const rendezvous::RendezvousInfo& info) const {
  WorkerGroup g;
  g.group_rank = info.group_rank;
  g.group_world_size = info.group_world_size;
  g.master_addr = info.master_addr;
  g.master_port = info.master_port;
  g.use_agent_store = true;
  g.restart_count = info.restart_count;
  int base = info.first_rank;
  int world = info.world_size;
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

// The round's protocol among the nodes, from its start to the end of the attempt.
void LocalAgent::Impl::begin_round(const rendezvous::RendezvousInfo& info) {
  attempt_ = std::make_unique<Attempt>(info, handler_->node_id());
  goodput_.begin_attempt(info);
  round_ = handler_->coordinate(info, io_, clock_);
  attempt_->spares = std::make_unique<SpareWatch>(info.spares, info.restart_count, *round_, clock_);
}

Task<void> LocalAgent::Impl::run_attempt() {
  auto lost = changed_.notifying([this](const std::string& what) { on_store_lost(what); });
  round_->watch_end(changed_.notifying([this](RoundEnd end) { on_round_end(std::move(end)); }),
                    lost);
  round_->watch_members(
      changed_.notifying([this](const std::vector<std::string>& dead) { on_dead(dead); }), lost);
  if (metrics_) metrics_->start_attempt();
  runner_.start(make_group(attempt_->info),
                changed_.notifying([this](const FailureRecord& f) { on_worker_failure(f); }),
                changed_.notifying([this] { attempt_->workers_done = true; }));
  if (config_.hang.enabled()) {
    hang_.start(changed_.notifying([this](const Stall& stall) { on_hang(stall); }),
                [this](std::chrono::milliseconds mine, const HangWatch::Adopt& adopt) {
                  round_->share_max("hang_longest_ms", mine.count(), [adopt](int64_t job) {
                    adopt(std::chrono::milliseconds(job));
                  });
                });
  }
  if (watchdog_) runner_.watch_timers(*watchdog_);
  // The primary tells the run of each spare that comes or goes; the node that keeps the
  // metrics discovery file lists them there.
  bool tell_run = observer_ && multi_node() && handler_->primary();
  bool tell_metrics = metrics_ && metrics_->lists_targets();
  if (tell_run || tell_metrics) {
    attempt_->spares->watch(
        [this, tell_run, tell_metrics](const std::vector<std::string>& spares, int attempt) {
          if (tell_run) observer_->spares_waiting(attempt, spares);
          if (tell_metrics) metrics_->spares_changed(spares);
        });
  }
  attempt_->stragglers = std::make_unique<StragglerWatch>(
      config_, attempt_->info, host_, *round_, runner_, clock_, observer_,
      [this](const StragglerJudge::Score& worst, const std::string& member) {
        exclude_straggler(worst, member);
      });
  // A stack capture in progress ends before the attempt does, unless a stop signal
  // came: the job then ends within the grace period, not the capture's bounds.
  co_await changed_.until([this] {
    return attempt_->workers_done && (!hang_.capturing() || signalled_ != 0);
  });
  co_await await_stop_signal_after_stopped_workers();
  tell_pending_failure();
  co_await await_winner();
  hang_.stop();
  attempt_->spares->stop();
  attempt_->stragglers->stop();
  goodput_.end_attempt(attempt_->decided);
  if (watchdog_) watchdog_->stop();
  // A node whose workers all succeeded keeps watching for the round's end, and whether
  // its members live, while it waits for the others (wait_for_all_done): a member lost
  // meanwhile ends the round, which would otherwise wait for it for ever. Otherwise
  // the watches end with the attempt.
  if (attempt_->decided || !runner_.failures().empty() || signalled_ != 0) round_->stop();
}

int LocalAgent::Impl::finish_success() { return finish(0, "finished", "", true); }

int LocalAgent::Impl::finish_signalled() {
  return finish(128 + signalled_, "killed", "received " + signal_name(signalled_));
}

// With the failure summary: the nodes kept out of the last round (--node_failure_limit),
// so that a job that ran out of nodes says which are out and why.
void LocalAgent::Impl::say_quarantined(const rendezvous::RendezvousInfo& info) {
  for (const auto& q : info.quarantined) {
    auto until = static_cast<std::time_t>(q.until_ms / 1000);
    std::tm tm{};
    localtime_r(&until, &tm);
    char at[16];
    std::strftime(at, sizeof(at), "%H:%M:%S", &tm);
    std::cerr << "ddprun: quarantined: " << q.node << " until " << at << " (" << q.reason << ")\n";
  }
}

// The run is closed, as finished or as failed. The round's own connections go first:
// a host keeps its store up until the other nodes have left, counting the connections
// still open.
Task<void> LocalAgent::Impl::end_job(bool succeeded) {
  round_.reset();
  if (succeeded) {
    co_await handler_->finish_job(after_stop_cancel_);
  } else {
    co_await handler_->job_failed(after_stop_cancel_);
  }
}

// A stop signal ends the job: the others are told, then the run is closed as failed.
Task<void> LocalAgent::Impl::end_signalled_job() {
  end_round(signalled_end());
  co_await await_winner();
  co_await end_job(false);
}

// A spare that was never needed: the job ended while it waited for a place.
int LocalAgent::Impl::finish_spare(const rendezvous::SpareNotNeeded& ended) {
  std::cerr << "ddprun: " << ended.what() << "\n";
  return finish(ended.job_failed() ? 1 : 0, ended.job_failed() ? "failed" : "finished", "",
                !ended.job_failed());
}

int LocalAgent::Impl::finish_failure(const std::vector<FailureRecord>& failures,
                                     const RoundEnd& over) {
  bool dropped = attempt_ && attempt_->dropped;
  if (attempt_) say_quarantined(attempt_->info);
  if (over.signalled && !dropped) {  // another node was told to stop the job
    std::cerr << "ddprun: the job was stopped: " << over.reason << "\n";
    return finish(over.exitcode, "killed", over.reason);
  }
  if (dropped || failures.empty()) {
    std::cerr << "ddprun: " << (dropped ? "" : "the job failed: ") << over.reason << "\n";
    return finish(over.exitcode, "failed", over.reason);
  }
  std::cerr << format_failure_summary(config_.spec.entrypoint_name, host_, failures) << std::flush;
  if (over.exitcode == kNoProgressExitCode) {  // a crash loop, stopped: why, and its own code
    std::cerr << "ddprun: the job failed: " << over.reason << "\n";
    return finish(kNoProgressExitCode, "failed", over.reason);
  }
  const FailureRecord& root = failures.front();
  return finish(shell_exit_code(root.exitcode), "failed",
                "rank " + std::to_string(root.global_rank) + " (local_rank " +
                    std::to_string(root.local_rank) + ") on " + host_ + " exited with " +
                    std::to_string(root.exitcode));
}

int LocalAgent::Impl::finish(int code, const std::string& status, const std::string& root_cause,
                             bool succeeded) {
  enter(Phase::kDone);
  // The observer completes the run on its own thread meanwhile (complete() or its
  // destructor waits for that, after the agent's end).
  if (observer_) observer_->finished(status, code, root_cause);
  if (succeeded) {
    log_dir_.remove_if_temporary();
  } else {
    log_dir_.remove_if_temporary_and_unread();
  }
  if (guard_) guard_->release();
  return code;
}

LocalAgent::LocalAgent(AgentConfig config, AgentServices services)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(services))) {}

LocalAgent::~LocalAgent() = default;

int LocalAgent::run() { return impl_->run(); }

}  // namespace ddprun::agent
