#include "agent/local_agent_impl.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>

#include "agent/orphan_guard.h"
#include "common/host.h"
#include "common/logging.h"

namespace asio = boost::asio;

namespace ddprun::agent {
namespace {

// When the first tracking poll (and system sample) of an attempt comes at the latest.
constexpr std::chrono::milliseconds kFirstTrackingPoll{1000};

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
      guard_(services.guard),
      observer_(services.observer),
      log_dir_(config_.log_dir, config_.run_id, only_small_files(config_)),
      host_(host_name()),
      clock_(services.clock),
      runner_(io_, config_, services.launcher, clock_, guard_, log_dir_, host_, observer_,
              services.inspector),
      hang_(config_, clock_, runner_, services.inspector, host_),
      watchdog_(config_.timer_file.empty()
                    ? nullptr
                    : std::make_unique<TimerWatchdog>(io_, clock_, config_.timer_file)),
      signals_(io_, config_,
               {[this](int sig) { on_stop_signal(sig); },
                [this](int sig) { return runner_.forward(sig); }}),
      waits_(signals_.stop_pending_fd()),
      tracking_timer_(clock_.make_timer()),
      stop_grace_(clock_.make_timer()) {}

int LocalAgent::Impl::run() {
  // Grandchildren orphaned by a dying worker are re-parented to us, so we can
  // reap them and nothing escapes the job.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  signals_.start();
  try {
    return run_rounds();
  } catch (const Signalled&) {
    return finish(128 + signalled_, "killed", "received " + signal_name(signalled_));
  } catch (const net::Interrupted&) {
    // A request of the rendezvous gave way to a stop signal, which the loop takes now.
    io_.poll();
    if (signalled_ == 0) throw;
    return finish(128 + signalled_, "killed", "received " + signal_name(signalled_));
  }
}

int LocalAgent::Impl::run_rounds() {
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
        observer_->round_over(info.restart_count, RoundEnd::kind_name(over_->kind), over_->reason);
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

// Runs `task` on the loop until it ends, among signals, timers and the rest; the first
// stop signal meanwhile calls `cancel` (which ends the task's wait at once) and ends
// the job: Signalled once the task has ended. Returns its value or throws what it threw.
template <typename T>
T LocalAgent::Impl::await_on_loop(Task<T> task, const std::function<void()>& cancel) {
  std::optional<T> value;
  std::exception_ptr error;
  bool finished = false;
  asio::co_spawn(io_, std::move(task), [&](const std::exception_ptr& e, T v) {
    error = e;
    if (!e) value = std::move(v);
    finished = true;
  });
  run_until(finished, cancel);
  if (error) std::rethrow_exception(error);
  return std::move(*value);
}

// Runs the loop until `finished` (set by one of its handlers); the first stop signal
// meanwhile calls `cancel`, and throws Signalled once `finished`.
void LocalAgent::Impl::run_until(const bool& finished, const std::function<void()>& cancel) {
  bool cancelled = false;
  while (!finished) {
    io_.run_one();
    if (signalled_ != 0 && !cancelled) {
      spdlog::warn("received {} while waiting for the other nodes", signal_name(signalled_));
      cancel();
      cancelled = true;
    }
  }
  if (cancelled) throw Signalled{};
}

// Joins the round: a coroutine whose waits for the other nodes are the loop's
// completions. A Ctrl-C meanwhile cancels it and ends ddprun (no worker runs now).
// Throws what the join threw; 128+signal ends the job.
rendezvous::RendezvousInfo LocalAgent::Impl::rendezvous(int round) {
  round_.reset();  // the last round's watches end before the next join
  if (!handler_) connect_rendezvous();
  auto info = await_on_loop(handler_->next_rendezvous(round, config_.spec.local_world_size),
                            [this] { handler_->cancel(); });
  // A signal that came with the round may still wait in the loop: take it now, while
  // no worker runs, so that none starts.
  io_.poll();
  if (multi_node()) set_log_node_rank(info.group_rank);
  return info;
}

// Makes the rendezvous handler, which hosts or connects to the rendezvous store, on the
// loop as the join is: a store that is not up yet is waited for there, and a Ctrl-C
// meanwhile cancels that wait at once.
void LocalAgent::Impl::connect_rendezvous() {
  CancelSignal cancel("rendezvous cancelled");
  auto made = await_on_loop(make_rendezvous_(cancel), [&cancel] { cancel.cancel(); });
  if (observer_ && multi_node()) {
    observer_->attach(made->store(), made->connect(), made->address(), made->primary());
  }
  handler_ = std::move(made);
}

WorkerGroup LocalAgent::Impl::make_group(const rendezvous::RendezvousInfo& info) const {
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

// The round's protocol among the nodes, from its start to the end of the attempt.
void LocalAgent::Impl::begin_round(const rendezvous::RendezvousInfo& info) {
  over_.reset();
  dropped_ = false;
  self_ = static_cast<size_t>(info.group_rank) < info.members.size()
              ? info.members[static_cast<size_t>(info.group_rank)]
              : "";
  round_ = handler_->coordinate(info, io_, clock_);
}

void LocalAgent::Impl::run_attempt(const rendezvous::RendezvousInfo& info) {
  bool done = false;
  round_->watch_end([this](RoundEnd end) { on_round_end(std::move(end)); },
                    [this](const std::string& what) { on_store_lost(what); });
  round_->watch_members([this, info](const std::vector<std::string>& dead) { on_dead(info, dead); },
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

// A run is readable while the job runs: what workers wrote is ingested as it comes.
// The first poll comes early (`first`), so that a short job has system metrics too.
void LocalAgent::Impl::poll_tracking(std::chrono::milliseconds first) {
  tracking_timer_->start(first, [this] {
    observer_->poll(false);
    poll_tracking(observer_->poll_interval());
  });
}

int LocalAgent::Impl::finish_success() {
  round_.reset();  // its watches' connections would keep the store waiting for them
  handler_->finish_job();
  return finish(0, "finished", "", true);
}

int LocalAgent::Impl::finish_failure(const std::vector<FailureRecord>& failures,
                                     const RoundEnd& over) {
  if (over.signalled && !dropped_) {  // another node was told to stop the job
    std::cerr << "ddprun: the job was stopped: " << over.reason << "\n";
    return finish(over.exitcode, "killed", over.reason);
  }
  if (dropped_ || failures.empty()) {
    std::cerr << "ddprun: " << (dropped_ ? "" : "the job failed: ") << over.reason << "\n";
    return finish(over.exitcode, "failed", over.reason);
  }
  std::cerr << format_failure_summary(config_.spec.entrypoint_name, host_, failures) << std::flush;
  const FailureRecord& root = failures.front();
  return finish(shell_exit_code(root.exitcode), "failed",
                "rank " + std::to_string(root.global_rank) + " (local_rank " +
                    std::to_string(root.local_rank) + ") on " + host_ + " exited with " +
                    std::to_string(root.exitcode));
}

int LocalAgent::Impl::finish(int code, const std::string& status, const std::string& root_cause,
                             bool succeeded) {
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
