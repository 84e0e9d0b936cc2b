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

// This node's name, unless the configuration gives one.
AgentConfig named(AgentConfig config) {
  if (config.host.empty()) config.host = host_name();
  return config;
}

// The workers of `info`'s round on this node.
WorkerGroup make_group(const AgentConfig& config, const rendezvous::RendezvousInfo& info) {
  WorkerGroup g;
  g.group_rank = info.group_rank;
  g.group_world_size = info.group_world_size;
  g.master_addr = info.master_addr;
  g.master_port = info.master_port;
  g.use_agent_store = true;
  g.restart_count = info.restart_count;
  int base = info.first_rank;
  int world = info.world_size;
  for (int i = 0; i < config.spec.local_world_size; ++i) {
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

}  // namespace

LocalAgent::Impl::Impl(AgentConfig config, AgentServices services)
    : config_(named(std::move(config))),
      services_(std::move(services)),
      log_dir_(config_.log_dir, config_.run_id, only_small_files(config_)),
      runner_(services_.io, config_, services_.launcher, services_.clock, services_.guard, log_dir_,
              config_.host, services_.observer, services_.inspector),
      preflight_(config_.preflight, services_.probe, config_.host),
      goodput_(config_.spec.local_world_size, config_.checkpoint_dir, runner_, services_.clock,
               services_.observer,
               [] { return static_cast<double>(rendezvous::wall_clock_ms()) / 1000; }),
      hang_(config_, services_.clock, runner_, services_.inspector, config_.host),
      watchdog_(
          config_.timer_file.empty()
              ? nullptr
              : std::make_unique<TimerWatchdog>(services_.io, services_.clock, config_.timer_file)),
      stop_(services_.clock),
      signals_(services_.io, config_,
               {[this](int sig) {
                  on_stop_signal(sig);
                  changed_.notify();
                },
                [this](int sig) { return runner_.forward(sig); }},
               services_.signals ? *services_.signals : os::process_signals()),
      end_(config_, config_.host, log_dir_, services_.guard, services_.observer,
           [this] { enter(Phase::kDone); }),
      shared_run_(services_.observer && multi_node()
                      ? std::make_unique<SharedRun>(*services_.observer, config_.run_id)
                      : nullptr),
      changed_(services_.io) {
  const auto& checks = config_.preflight.checks;
  if (std::find(checks.begin(), checks.end(), Check::kLink) != checks.end()) {
    links_ = std::make_unique<LinkCheck>(services_.io, services_.observer);
  }
}

// The whole job is one coroutine on the loop, and the loop runs once: until it ends.
int LocalAgent::Impl::run() {
  // Grandchildren orphaned by a dying worker are re-parented to us, so we can
  // reap them and nothing escapes the job.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  signals_.start();
  if (config_.metrics.port) {
    metrics_ = std::make_unique<MetricsEndpoint>(services_.io, config_, runner_, services_.clock,
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
  asio::io_context& io = services_.io;
  asio::co_spawn(io, run_job(), [&](const std::exception_ptr& e, int c) {
    error = e;
    code = c;
    io.stop();  // what is left on the loop (the signals' watches, ...) ends with the agent
  });
  try {
    io.run();
    if (error) std::rethrow_exception(error);
    return code;
  } catch (const Signalled&) {
    return end_.signalled(stop_.signal());
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
  if (handler_) co_await handler_->leave(stop_.after_stop());
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
      co_return end_.spare(e);
    } catch (const Unfit& unfit) {
      co_return unfit.code;
    }
    round = info.round;
    begin_round(info);
    if (stop_.signal() == 0 && links_) co_await probe_links();
    if (metrics_) metrics_->share(info, attempt_->self, config_.host, attempt_->round());
    if (stop_.signal() != 0) {
      // The signal came as the round completed: start nothing, and tell the others.
      co_await end_signalled_job();
      co_return end_.signalled(stop_.signal());
    }
    if (services_.observer) co_await tell_round_formed(info);
    if (std::exchange(omp_banner_due, false)) std::cerr << omp_banner(config_.omp_num_threads);
    enter(Phase::kRunning);
    if (metrics_) metrics_->start_attempt();
    if (watchdog_) runner_.watch_timers(*watchdog_);
    co_await attempt_->run(make_group(config_, info));
    if (watchdog_) watchdog_->stop();
    Attempt& a = *attempt_;
    if (a.decided && a.decided->hang) co_await report_hang();
    if (auto* observer = services_.observer) {
      observer->attempt_ended();
      if (a.decided) {
        observer->round_over(info.restart_count, RoundEnd::kind_name(a.decided->kind),
                             a.decided->reason);
      }
    }
    if (stop_.signal() != 0 && !a.failed_before_signal()) {
      co_await end_signalled_job();
      co_return end_.signalled(stop_.signal());
    }
    const auto& failures = runner_.failures();
    if (!a.decided && failures.empty()) {
      // This node is done; the job is done when every node is (a later failure
      // elsewhere still restarts everyone, this node included).
      enter(Phase::kAwaitingOthers);
      a.decided = co_await a.wait_for_all_done();
      if (a.decided) goodput_.round_ends();
      if (stop_.signal() != 0) {
        // Stopped while the others still run: they are told, as from a running round.
        if (!a.decided && !a.all_done) co_await end_signalled_job();
        co_return end_.signalled(stop_.signal());
      }
      if (!a.decided) {
        co_await end_job(true);
        co_return end_.success();
      }
      if (a.decided->hang) co_await report_hang();
    }
    const std::optional<RoundEnd>& over = a.decided;
    if (!over || over->kind == RoundEnd::Kind::kFinal) {
      // The job is over for every node (a dropped node's is not): spares waiting leave.
      // A store that stopped answering is not asked again.
      if (!a.dropped && !a.store_lost) co_await end_job(false);
      co_return end_.failure(failures, over.value_or(RoundEnd{}), a.info, a.dropped);
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
  if (attempt_) attempt_->close_round();  // the last round's watches end before the next join
  // What the last round left queued on the loop (its cancelled waits) runs before the
  // join's first request, as when the join was a coroutine of its own: a join begun
  // ahead of them was seen to hang on the store (Elastic.NodeThatFinished...).
  co_await asio::post(services_.io, asio::use_awaitable);
  if (!handler_) {
    co_await connect_rendezvous();
    auto unfit = co_await unfit_clock();
    if (auto cause = unfit) {
      co_await handler_->keep_out(*cause, stop_.after_stop());
      throw Unfit{end_.finish(kPreflightExitCode, "failed", *cause)};
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
  handler_ =
      co_await unless_signalled(services_.make_rendezvous(cancel), [&cancel] { cancel.cancel(); });
  if (shared_run_) {
    CancelSignal publishing("publishing the run cancelled");
    co_await unless_signalled(shared_run_->publish(*handler_, publishing),
                              [&publishing] { publishing.cancel(); });
  }
}

// The round's attempt, from its start to its end; the spares' changes told to the run
// (by the primary) and to the metrics discovery file (by the node that keeps it).
void LocalAgent::Impl::begin_round(const rendezvous::RendezvousInfo& info) {
  Clock& clock = services_.clock;
  tracking::RunObserver* observer = services_.observer;
  attempt_ = std::make_unique<Attempt>(
      info, handler_->node_id(), handler_->coordinate(info, services_.io, clock),
      AttemptContext{config_, config_.host, clock, runner_, goodput_, hang_, restarts_, signals_,
                     stop_, log_dir_, observer, changed_});
  goodput_.begin_attempt(info);
  bool tell_run = observer && multi_node() && handler_->primary();
  bool tell_metrics = metrics_ && metrics_->lists_targets();
  if (tell_run || tell_metrics) {
    attempt_->spares->watch(
        [this, tell_run, tell_metrics](const std::vector<std::string>& spares, int attempt) {
          if (tell_run) services_.observer->spares_waiting(attempt, spares);
          if (tell_metrics) metrics_->spares_changed(spares);
        });
  }
}

Task<void> LocalAgent::Impl::report_hang() {
  enter(Phase::kReportingHang);
  co_await attempt_->report_hang();
}

LocalAgent::LocalAgent(AgentConfig config, AgentServices services)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(services))) {}

LocalAgent::~LocalAgent() = default;

int LocalAgent::run() { return impl_->run(); }

}  // namespace ddprun::agent
