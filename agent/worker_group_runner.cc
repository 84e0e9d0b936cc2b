#include "agent/worker_group_runner.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "agent/log_dir.h"
#include "agent/orphan_guard.h"
#include "agent/process_launcher.h"
#include "agent/process_table.h"
#include "agent/run_observer.h"
#include "agent/worker_env.h"
#include "agent/worker_output.h"

namespace ddprun::agent {
namespace {

// Pipes held open by a process that escaped the worker's session get this long
// after the last worker exited before ddprun stops waiting for their EOF.
constexpr std::chrono::milliseconds kPipeDrainTimeout{2000};

int exitcode_of(int status) {
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace

WorkerGroupRunner::WorkerGroupRunner(boost::asio::io_context& io, const AgentConfig& config,
                                     ProcessLauncher& launcher, OrphanGuard* guard, LogDir& log_dir,
                                     std::string host, RunObserver* observer)
    : io_(io),
      config_(config),
      launcher_(launcher),
      guard_(guard),
      observer_(observer),
      log_dir_(log_dir),
      host_(std::move(host)),
      inherited_env_(current_environment()),
      child_signals_(io, SIGCHLD),
      grace_timer_(io),
      drain_timer_(io) {
  wait_for_children();
}

WorkerGroupRunner::~WorkerGroupRunner() = default;

void WorkerGroupRunner::start(WorkerGroup group,
                              std::function<void(const FailureRecord&)> on_failure,
                              std::function<void()> on_done) {
  // The last attempt's streams may still have cancelled read handlers queued; keep
  // them one attempt longer rather than free memory those handlers refer to.
  retired_outputs_ = std::move(outputs_);
  outputs_.clear();
  failures_.clear();
  group_ = std::move(group);
  on_failure_ = std::move(on_failure);
  on_done_ = std::move(on_done);
  phase_ = Phase::kRunning;
  int attempt = group_.restart_count;
  for (auto& w : group_.workers) {
    std::string dir = log_dir_.worker_dir(attempt, w.local_rank);
    w.error_file = dir + "/error.json";
    PrefixVars vars{config_.spec.role, w.local_rank, w.global_rank, group_.group_rank, host_};
    auto out =
        std::make_unique<WorkerOutput>(io_, config_.spec, w.local_rank, dir,
                                       expand_prefix(config_.spec.log_line_prefix_template, vars));
    SpawnOptions opts;
    opts.argv = build_worker_argv(config_.spec, w.local_rank);
    opts.executable = opts.argv.front();
    std::map<std::string, std::string> extra;
    if (observer_) observer_->add_worker_env(group_.group_rank, w.global_rank, attempt, extra);
    opts.env = build_worker_env(inherited_env_, config_, group_, w, extra);
    opts.stdout_fd = out->child_stdout();
    opts.stderr_fd = out->child_stderr();
    w.pid = launcher_.spawn(opts);
    w.state = WorkerState::kHealthy;
    if (guard_) guard_->watch(w.pid);
    if (observer_) {
      observer_->worker_started(group_.group_rank, w.global_rank, w.local_rank, attempt, w.pid);
    }
    out->start([this] { maybe_done(); });
    outputs_.push_back(std::move(out));
    spdlog::debug("started local_rank {} (rank {}) as pid {}", w.local_rank, w.global_rank, w.pid);
  }
}

void WorkerGroupRunner::wait_for_children() {
  child_signals_.async_wait([this](const boost::system::error_code& ec, int) {
    if (ec) return;
    reap_children();
    wait_for_children();
  });
}

// One SIGCHLD may stand for many exits: reap them all, then judge them together so
// workers that failed at the same moment all count as failures.
void WorkerGroupRunner::reap_children() {
  bool was_running = phase_ == Phase::kRunning;
  size_t failures_before = failures_.size();
  int status = 0;
  pid_t pid = 0;
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
    Worker* w = find_worker(pid);
    if (w == nullptr) continue;  // an orphaned grandchild or the guard
    w->exit = WorkerExit{exitcode_of(status), std::time(nullptr)};
    if (observer_) {
      observer_->worker_exited(group_.group_rank, w->global_rank, w->local_rank,
                               group_.restart_count, w->exit->exitcode);
    }
    if (w->exit->exitcode == 0) {
      w->state = WorkerState::kSucceeded;
    } else if (was_running) {
      w->state = WorkerState::kFailed;
      failures_.push_back(describe_failure(w->global_rank, w->local_rank, w->pid, w->exit->exitcode,
                                           w->exit->wall_time, w->error_file));
    } else {
      w->state = WorkerState::kStopped;
    }
  }
  if (failures_before == 0 && !failures_.empty()) {
    stop(SIGTERM);
    if (on_failure_) on_failure_(failures_.front());
  }
  if (running_workers() == 0 && (phase_ == Phase::kRunning || phase_ == Phase::kStopping)) {
    begin_drain();
  }
}

Worker* WorkerGroupRunner::find_worker(pid_t pid) {
  for (auto& w : group_.workers)
    if (w.pid == pid && !w.exit) return &w;
  return nullptr;
}

int WorkerGroupRunner::running_workers() const {
  int n = 0;
  for (const auto& w : group_.workers) n += (w.pid > 0 && !w.exit) ? 1 : 0;
  return n;
}

void WorkerGroupRunner::stop(int sig) {
  if (phase_ != Phase::kRunning && phase_ != Phase::kStopping) return;
  phase_ = Phase::kStopping;
  signal_running(sig);
  // (Re-)arming the timer: a second stop restarts the grace period.
  grace_timer_.expires_after(config_.grace_period);
  grace_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    spdlog::warn("workers did not stop within the grace period; sending SIGKILL");
    signal_running(SIGKILL);
  });
}

void WorkerGroupRunner::signal_running(int sig) {
  for (const auto& w : group_.workers)
    if (w.pid > 0 && !w.exit) launcher_.signal_group(w.pid, sig);
}

// Every worker has exited: kill whatever they left behind in their sessions (and
// orphans re-parented to us), then wait for the pipes to close.
void WorkerGroupRunner::begin_drain() {
  phase_ = Phase::kDraining;
  grace_timer_.cancel();
  std::vector<pid_t> sessions;
  for (const auto& w : group_.workers) sessions.push_back(w.pid);
  kill_sessions(sessions);
  for (pid_t orphan : children_of(::getpid())) {
    if (!guard_ || orphan != guard_->pid()) ::kill(orphan, SIGKILL);
  }
  drain_timer_.expires_after(kPipeDrainTimeout);
  drain_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    for (auto& out : outputs_) out->drain_and_close();
    maybe_done();
  });
  maybe_done();
}

void WorkerGroupRunner::maybe_done() {
  if (phase_ != Phase::kDraining) return;
  for (const auto& out : outputs_)
    if (out->open_pipes() > 0) return;
  drain_timer_.cancel();
  phase_ = Phase::kIdle;
  if (on_done_) on_done_();
}

}  // namespace ddprun::agent
