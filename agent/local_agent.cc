#include "agent/local_agent.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <iostream>
#include <spdlog/spdlog.h>

#include "agent/log_dir.h"
#include "agent/orphan_guard.h"
#include "agent/process_launcher.h"
#include "agent/process_table.h"
#include "agent/worker_env.h"
#include "agent/worker_output.h"
#include "common/error.h"

namespace asio = boost::asio;

namespace ddprun::agent {
namespace {

// Pipes held open by a process that escaped the worker's session get this long
// after the last worker exited before ddprun stops waiting for their EOF.
constexpr std::chrono::milliseconds kPipeDrainTimeout{2000};

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

int free_port() {
  int fd = check_syscall(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), "socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    int err = errno;
    ::close(fd);
    throw SystemError("cannot find a free port", err);
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

int exitcode_of(int status) {
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace

/// Phases of one attempt: kRunning -> kStopping (a worker failed or ddprun was
/// signalled; the rest are being stopped) -> kDraining (all workers exited; reading
/// what is left in their pipes) -> kDone.
enum class Phase { kRunning, kStopping, kDraining, kDone };

class LocalAgent::Impl {
 public:
  Impl(AgentConfig config, ProcessLauncher& launcher, OrphanGuard* guard)
      : config_(std::move(config)),
        launcher_(launcher),
        guard_(guard),
        child_signals_(io_, SIGCHLD),
        stop_signals_(io_, SIGINT, SIGTERM, SIGHUP),
        grace_timer_(io_),
        drain_timer_(io_),
        log_dir_(config_.log_dir, config_.run_id),
        inherited_env_(current_environment()),
        host_(host_name()) {
    stop_signals_.add(SIGQUIT);
  }

  int run() {
    // Grandchildren orphaned by a dying worker are re-parented to us, so we can
    // reap them and nothing escapes the job.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    wait_for_children();
    wait_for_stop_signals();
    int restart_count = 0;
    while (true) {
      run_attempt(restart_count);
      if (signalled_ != 0) return finish(128 + signalled_);
      if (failures_.empty()) {
        log_dir_.remove_if_temporary();
        return finish(0);
      }
      if (restart_count >= config_.spec.max_restarts) {
        std::cerr << format_failure_summary(config_.spec.entrypoint_name, host_, failures_)
                  << std::flush;
        return finish(shell_exit_code(failures_.front().exitcode));
      }
      ++restart_count;
      spdlog::warn("worker group failed (rank {} exitcode {}); restarting, attempt {} of {}",
                   failures_.front().global_rank, failures_.front().exitcode, restart_count,
                   config_.spec.max_restarts);
    }
  }

 private:
  int finish(int code) {
    if (guard_) guard_->release();
    return code;
  }

  void run_attempt(int restart_count) {
    failures_.clear();
    phase_ = Phase::kRunning;
    group_ = make_group(restart_count);
    start_workers(restart_count);
    while (phase_ != Phase::kDone) io_.run_one();
    // Run the cancelled read handlers before the streams they refer to go away.
    io_.poll();
    outputs_.clear();
  }

  WorkerGroup make_group(int restart_count) const {
    WorkerGroup g;
    g.group_rank = config_.node_rank;
    g.group_world_size = config_.max_nodes;
    g.master_addr = config_.master_addr;
    g.master_port = config_.master_port;
    if (config_.rdzv_backend != "static") {
      // Single-node c10d/standalone: rank 0 hosts torch's store on a port that is free now.
      g.master_addr = config_.local_addr.empty() ? "localhost" : config_.local_addr;
      g.master_port = free_port();
    }
    g.use_agent_store = false;
    g.restart_count = restart_count;
    int n = config_.spec.local_world_size;
    int world = n * g.group_world_size;
    for (int i = 0; i < n; ++i) {
      Worker w;
      w.local_rank = i;
      w.global_rank = g.group_rank * n + i;
      w.role_rank = w.global_rank;
      w.world_size = world;
      w.role_world_size = world;
      g.workers.push_back(w);
    }
    return g;
  }

  void start_workers(int attempt) {
    for (auto& w : group_.workers) {
      std::string dir = log_dir_.worker_dir(attempt, w.local_rank);
      w.error_file = dir + "/error.json";
      PrefixVars vars{config_.spec.role, w.local_rank, w.global_rank, group_.group_rank, host_};
      auto out = std::make_unique<WorkerOutput>(
          io_, config_.spec, w.local_rank, dir,
          expand_prefix(config_.spec.log_line_prefix_template, vars));
      SpawnOptions opts;
      opts.argv = build_worker_argv(config_.spec, w.local_rank);
      opts.executable = opts.argv.front();
      opts.env = build_worker_env(inherited_env_, config_, group_, w);
      opts.stdout_fd = out->child_stdout();
      opts.stderr_fd = out->child_stderr();
      w.pid = launcher_.spawn(opts);
      w.state = WorkerState::kHealthy;
      if (guard_) guard_->watch(w.pid);
      out->start([this] { maybe_done(); });
      outputs_.push_back(std::move(out));
      spdlog::debug("started local_rank {} (rank {}) as pid {}", w.local_rank, w.global_rank,
                    w.pid);
    }
  }

  void wait_for_children() {
    child_signals_.async_wait([this](const boost::system::error_code& ec, int) {
      if (ec) return;
      reap_children();
      wait_for_children();
    });
  }

  void wait_for_stop_signals() {
    stop_signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
      if (ec) return;
      on_stop_signal(sig);
      wait_for_stop_signals();
    });
  }

  // One SIGCHLD may stand for many exits: reap them all, then judge them together so
  // workers that failed at the same moment all count as failures.
  void reap_children() {
    bool was_running = phase_ == Phase::kRunning;
    bool any_failed = false;
    int status = 0;
    pid_t pid = 0;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      Worker* w = find_worker(pid);
      if (w == nullptr) continue;  // an orphaned grandchild or the guard
      w->exit = WorkerExit{exitcode_of(status), std::time(nullptr)};
      if (w->exit->exitcode == 0) {
        w->state = WorkerState::kSucceeded;
      } else if (was_running) {
        w->state = WorkerState::kFailed;
        failures_.push_back(describe_failure(w->global_rank, w->local_rank, w->pid,
                                             w->exit->exitcode, w->exit->wall_time,
                                             w->error_file));
        any_failed = true;
      } else {
        w->state = WorkerState::kStopped;
      }
    }
    if (any_failed) begin_stop(SIGTERM);
    if (running_workers() == 0 && (phase_ == Phase::kRunning || phase_ == Phase::kStopping)) {
      begin_drain();
    }
  }

  Worker* find_worker(pid_t pid) {
    for (auto& w : group_.workers)
      if (w.pid == pid && !w.exit) return &w;
    return nullptr;
  }

  int running_workers() const {
    int n = 0;
    for (const auto& w : group_.workers) n += (w.pid > 0 && !w.exit) ? 1 : 0;
    return n;
  }

  void on_stop_signal(int sig) {
    if (phase_ == Phase::kDraining || phase_ == Phase::kDone) {
      signalled_ = signalled_ ? signalled_ : sig;
      return;
    }
    if (signalled_ != 0) {
      spdlog::warn("received {} again; killing the workers now", signal_name(sig));
      signal_running(SIGKILL);
      return;
    }
    signalled_ = sig;
    spdlog::warn("received {}; stopping {} worker(s)", signal_name(sig), running_workers());
    begin_stop(sig);
  }

  // Sends `sig` to every running worker's group, then SIGKILL after the grace period
  // (re-arming it if a stop is already under way).
  void begin_stop(int sig) {
    phase_ = Phase::kStopping;
    signal_running(sig);
    grace_timer_.expires_after(config_.grace_period);
    grace_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      spdlog::warn("workers did not stop within the grace period; sending SIGKILL");
      signal_running(SIGKILL);
    });
  }

  void signal_running(int sig) {
    for (const auto& w : group_.workers)
      if (w.pid > 0 && !w.exit) launcher_.signal_group(w.pid, sig);
  }

  // Every worker has exited: kill whatever they left behind in their sessions
  // (and orphans re-parented to us), then wait for the pipes to close.
  void begin_drain() {
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

  void maybe_done() {
    if (phase_ != Phase::kDraining) return;
    for (const auto& out : outputs_)
      if (out->open_pipes() > 0) return;
    drain_timer_.cancel();
    phase_ = Phase::kDone;
  }

  AgentConfig config_;
  ProcessLauncher& launcher_;
  OrphanGuard* guard_;
  asio::io_context io_;
  asio::signal_set child_signals_;
  asio::signal_set stop_signals_;
  asio::steady_timer grace_timer_;
  asio::steady_timer drain_timer_;
  LogDir log_dir_;
  std::vector<std::string> inherited_env_;
  std::string host_;

  Phase phase_ = Phase::kDone;
  WorkerGroup group_;
  std::vector<std::unique_ptr<WorkerOutput>> outputs_;
  std::vector<FailureRecord> failures_;  // this attempt's, root cause first
  int signalled_ = 0;
};

LocalAgent::LocalAgent(AgentConfig config, ProcessLauncher& launcher, OrphanGuard* guard)
    : impl_(std::make_unique<Impl>(std::move(config), launcher, guard)) {}

LocalAgent::~LocalAgent() = default;

int LocalAgent::run() { return impl_->run(); }

}  // namespace ddprun::agent
