#pragma once

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "agent/agent_config.h"
#include "agent/failure_summary.h"
#include "agent/hang/hang_monitor.h"
#include "agent/hang/process_inspector.h"
#include "agent/hang/timer_watchdog.h"
#include "agent/process_launcher.h"
#include "agent/worker.h"
#include "agent/worker_progress.h"
#include "common/clock.h"
#include "tracking/run_observer.h"

namespace ddprun::agent {

class LogDir;
class OrphanGuard;
class ProgressPage;
class WorkerOutput;
class LineFilter;

/// Runs one attempt of this node's workers inside the agent's io_context: spawns
/// them with torchrun's environment, learns of every exit from the launcher at once,
/// stops the rest on the first failure (signal, grace period, SIGKILL), kills what
/// they leave behind and drains their output. A worker still running long after all
/// the others exited 0 is named (HangOptions::straggler_warning).
///
/// Phases of an attempt: kRunning -> kStopping (a worker failed or stop() was
/// called) -> kDraining (all workers exited; reading what is left in their pipes)
/// -> kIdle. Single-threaded: use on the io_context's thread.
class WorkerGroupRunner : public WorkerProgress {
 public:
  /// Takes the launcher's exit notifications. `guard`, `inspector` and `observer` may
  /// be null; the observer hears of every worker's start and exit.
  WorkerGroupRunner(boost::asio::io_context& io, const AgentConfig& config,
                    ProcessLauncher& launcher, Clock& clock, OrphanGuard* guard, LogDir& log_dir,
                    std::string host, tracking::RunObserver* observer,
                    ProcessInspector* inspector = nullptr);
  ~WorkerGroupRunner() override;

  /// Spawns the group's workers for attempt `group.restart_count`. `on_failure` runs at
  /// the first failed worker (before the others are stopped); `on_done` once every
  /// worker has exited and its output is drained. Throws SystemError if spawning fails.
  void start(WorkerGroup group, std::function<void(const FailureRecord&)> on_failure,
             std::function<void()> on_done);

  /// Sends `sig` to every running worker's group and nothing more; returns how many.
  int forward(int sig);
  /// Lets this attempt's workers set timers on `watchdog`: a timer that expires sends
  /// its signal to the process that set it, which must be one of these workers' own,
  /// once its stacks are taken (with an inspector; bounded time).
  void watch_timers(TimerWatchdog& watchdog);
  /// Sends `sig` to every running worker's group, then SIGKILL after the grace period.
  /// A worker still there a while after SIGKILL (uninterruptible sleep) is named and
  /// left behind, so that stopping never waits forever.
  void stop(int sig);

  bool idle() const { return phase_ == Phase::kIdle; }
  bool running() const override { return phase_ == Phase::kRunning; }
  const WorkerGroup& group() const { return group_; }
  /// Where a worker of this attempt keeps its logs (and progress page, stack dumps).
  const std::string& worker_dir(int local_rank) const { return dirs_.at(local_rank); }
  /// A worker's progress now: its progress page (with hang detection on) and output.
  ProgressSample progress(int local_rank) const override;
  int running_workers() const;
  /// Workers that SIGKILL could not end (in D state), left behind, in any attempt so far:
  /// "rank R (pid P, <state and where the kernel holds it>)". Their host is unhealthy.
  const std::vector<std::string>& left_behind() const { return left_behind_; }
  /// This attempt's failed workers, root cause first (empty if none failed).
  const std::vector<FailureRecord>& failures() const { return failures_; }

 private:
  enum class Phase { kIdle, kRunning, kStopping, kDraining };

  void on_exits(const std::vector<ChildExit>& exits);
  // Spawns the workers set up in `spawns` from index `started` on, advancing it.
  void start_prepared(std::vector<SpawnOptions>& spawns, size_t& started);
  std::vector<pid_t> session_pids() const;  // the group's workers' (each leads its session)
  void add_stack_env(const std::string& dir, std::map<std::string, std::string>& extra);
  void add_python_path(std::map<std::string, std::string>& extra) const;
  void record_failure(const Worker& w);
  void add_progress_page(const std::string& dir, std::map<std::string, std::string>& extra);
  void add_hang_env(const std::string& dir, Worker& w, std::map<std::string, std::string>& extra);
  void reap(const TimerWatchdog::Expiry& e);
  void watch_stragglers();
  void abandon_unkillable();
  Worker* find_worker(pid_t pid);
  void signal_running(int sig);
  void begin_drain();
  void maybe_done();

  boost::asio::io_context& io_;
  const AgentConfig& config_;
  ProcessLauncher& launcher_;
  OrphanGuard* guard_;
  tracking::RunObserver* observer_;
  LogDir& log_dir_;
  std::string host_;
  std::vector<std::string> inherited_env_;
  std::unique_ptr<Timer> grace_timer_;
  std::unique_ptr<Timer> drain_timer_;
  std::unique_ptr<Timer> kill_timer_;
  std::unique_ptr<Timer> straggler_timer_;
  ProcessInspector* inspector_;

  Phase phase_ = Phase::kIdle;
  WorkerGroup group_;
  // stdout's and stderr's filtered lines of an attempt (--duplicate_*_filters), or null.
  std::array<std::shared_ptr<const LineFilter>, 2> line_filters(int attempt);

  std::vector<std::unique_ptr<WorkerOutput>> outputs_;
  std::vector<std::unique_ptr<WorkerOutput>> retired_outputs_;
  std::vector<std::unique_ptr<ProgressPage>> pages_;  // with hang detection on
  std::vector<std::string> dirs_;
  std::vector<FailureRecord> failures_;
  std::vector<std::string> left_behind_;
  std::function<void(const FailureRecord&)> on_failure_;
  std::function<void()> on_done_;
};

}  // namespace ddprun::agent
