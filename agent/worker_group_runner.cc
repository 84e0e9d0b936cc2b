#include "agent/worker_group_runner.h"

#include <signal.h>
#include <sys/stat.h>

#include <cstdlib>
#include <utility>

#include <spdlog/spdlog.h>

#include "agent/hang/flight_recorder.h"
#include "agent/log_dir.h"
#include "agent/orphan_guard.h"
#include "agent/hang/progress_page.h"
#include "agent/hang/timer_watchdog.h"
#include "agent/hang/watchdog_report.h"
#include "agent/worker_env.h"
#include "agent/worker_output.h"
#include "os/proc_stat.h"
#include "tracking/run_observer.h"

namespace ddprun::agent {
namespace {

// Pipes held open by a process that escaped the worker's session get this long
// after the last worker exited before ddprun stops waiting for their EOF.
constexpr std::chrono::milliseconds kPipeDrainTimeout{2000};
// A worker not gone this long after SIGKILL is stuck in the kernel: it is left behind.
constexpr std::chrono::milliseconds kKillWait{5000};

}  // namespace

WorkerGroupRunner::WorkerGroupRunner(boost::asio::io_context& io, const AgentConfig& config,
                                     ProcessLauncher& launcher, Clock& clock, OrphanGuard* guard,
                                     LogDir& log_dir, std::string host,
                                     tracking::RunObserver* observer, ProcessInspector* inspector)
    : io_(io),
      config_(config),
      launcher_(launcher),
      guard_(guard),
      observer_(observer),
      log_dir_(log_dir),
      host_(std::move(host)),
      inherited_env_(current_environment()),
      grace_timer_(clock.make_timer()),
      drain_timer_(clock.make_timer()),
      kill_timer_(clock.make_timer()),
      straggler_timer_(clock.make_timer()),
      inspector_(inspector) {
  launcher_.on_exit([this](const std::vector<ChildExit>& exits) { on_exits(exits); });
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
  pages_.clear();
  dirs_.clear();
  group_ = std::move(group);
  on_failure_ = std::move(on_failure);
  on_done_ = std::move(on_done);
  phase_ = Phase::kRunning;
  int attempt = group_.restart_count;
  // The guard learns the group's sessions in one write (one wake-up of it) once they
  // are started, also when a later one cannot start; a worker's own death signal
  // covers it until then.
  struct WatchWhenStarted {
    WorkerGroupRunner& runner;
    ~WatchWhenStarted() {
      if (runner.guard_) runner.guard_->watch(runner.session_pids());
    }
  } watch_when_started{*this};
  // Workers are set up (directory, output pipes, environment) while the observer is not
  // ready for them (its run is made on another thread meanwhile), and started as soon
  // as it is: the set-up of the rest then overlaps the first ones' start.
  std::vector<SpawnOptions> spawns;
  spawns.reserve(group_.workers.size());
  size_t started = 0;
  bool may_start = observer_ == nullptr;
  WorkerOutput::Filters filters = line_filters(attempt);
  for (auto& w : group_.workers) {
    std::string dir = log_dir_.worker_dir(attempt, w.local_rank);
    dirs_.push_back(dir);
    w.error_file = dir + "/error.json";
    PrefixVars vars{config_.spec.role, w.local_rank, w.global_rank, group_.group_rank, host_};
    auto out = std::make_unique<WorkerOutput>(
        io_, config_.spec, w.local_rank, dir,
        expand_prefix(config_.spec.log_line_prefix_template, vars), filters);
    SpawnOptions& opts = spawns.emplace_back();
    opts.argv = build_worker_argv(config_.spec, w.local_rank);
    opts.executable = opts.argv.front();
    std::map<std::string, std::string> extra;
    if (observer_) observer_->add_worker_env(group_.group_rank, w.global_rank, attempt, extra);
    if (config_.hang.enabled() || !config_.timer_file.empty()) add_stack_env(dir, extra);
    add_python_path(extra);
    // The progress page: hang detection, the metrics endpoint (each rank's steps),
    // straggler detection (their step times) and the run's goodput accounting read it.
    if (config_.hang.enabled() || config_.metrics.port || observer_ ||
        (config_.stragglers.enabled() && w.world_size > 1)) {
      add_progress_page(dir, extra);
    }
    if (config_.hang.enabled()) add_hang_env(dir, w, extra);
    if (!config_.timer_file.empty()) extra["TORCHELASTIC_TIMER_FILE"] = config_.timer_file;
    opts.env = build_worker_env(inherited_env_, config_, group_, w, extra);
    opts.stdout_fd = out->child_stdout();
    opts.stderr_fd = out->child_stderr();
    if (static_cast<size_t>(w.local_rank) < config_.cpu_bindings.size()) {
      const CpuBinding& b = config_.cpu_bindings[static_cast<size_t>(w.local_rank)];
      opts.cpus = b.cpus;
      opts.memory_node = b.memory_node;
    }
    outputs_.push_back(std::move(out));
    may_start = may_start || observer_->may_start_workers(attempt, false);
    if (may_start) start_prepared(spawns, started);
  }
  if (!may_start) observer_->may_start_workers(attempt, true);
  start_prepared(spawns, started);
}

void WorkerGroupRunner::start_prepared(std::vector<SpawnOptions>& spawns, size_t& started) {
  int attempt = group_.restart_count;
  for (; started < spawns.size(); ++started) {
    Worker& w = group_.workers[started];
    w.pid = launcher_.spawn(std::move(spawns[started]));
    w.state = WorkerState::kHealthy;
    if (observer_) {
      observer_->worker_started(group_.group_rank, w.global_rank, w.local_rank, attempt, w.pid);
    }
    outputs_[started]->start([this] { maybe_done(); });
    spdlog::debug("started local_rank {} (rank {}) as pid {}", w.local_rank, w.global_rank, w.pid);
  }
}

std::vector<pid_t> WorkerGroupRunner::session_pids() const {
  std::vector<pid_t> pids;
  for (const auto& w : group_.workers) pids.push_back(w.pid);
  return pids;
}

// The attempt's filtered_stdout.log / filtered_stderr.log, where filters were given,
// beside its workers' directories (torchrun 2.14's layout).
std::array<std::shared_ptr<const LineFilter>, 2> WorkerGroupRunner::line_filters(int attempt) {
  const WorkerSpec& spec = config_.spec;
  if (spec.duplicate_stdout_filters.empty() && spec.duplicate_stderr_filters.empty()) return {};
  std::string dir = log_dir_.attempt_dir(attempt);
  WorkerOutput::Filters filters;
  if (!spec.duplicate_stdout_filters.empty()) {
    filters[0] =
        std::make_shared<LineFilter>(dir + "/filtered_stdout.log", spec.duplicate_stdout_filters);
  }
  if (!spec.duplicate_stderr_filters.empty()) {
    filters[1] =
        std::make_shared<LineFilter>(dir + "/filtered_stderr.log", spec.duplicate_stderr_filters);
  }
  return filters;
}

// Where the start-up hook finds them, Python workers' stacks are taken when they hang,
// and before the worker watchdog reaps one.
void WorkerGroupRunner::add_stack_env(const std::string& dir,
                                      std::map<std::string, std::string>& extra) {
  extra["DDPRUN_STACK_FILE"] = dir + "/python_stacks.txt";
  extra["DDPRUN_STACK_SIGNAL"] = std::to_string(stack_dump_signal());
}

// ddprun's start-up hook (sitecustomize.py) first on the worker's path, then the
// tracking client, then what the worker inherits.
void WorkerGroupRunner::add_python_path(std::map<std::string, std::string>& extra) const {
  std::string path;
  for (const std::string* dir : {&config_.python_hook_dir, &config_.python_client_dir}) {
    if (!dir->empty()) path += (path.empty() ? "" : ":") + *dir;
  }
  if (path.empty()) return;
  const char* inherited = std::getenv("PYTHONPATH");
  if (inherited && *inherited) path += std::string(":") + inherited;
  extra["PYTHONPATH"] = path;
}

// The page a worker's tracking client reports its progress on (hang detection, metrics).
void WorkerGroupRunner::add_progress_page(const std::string& dir,
                                          std::map<std::string, std::string>& extra) {
  pages_.push_back(std::make_unique<ProgressPage>(dir + "/" + kProgressPage));
  extra["DDPRUN_PROGRESS_FILE"] = pages_.back()->path();
}

// What hang detection needs besides stacks and the progress page: PyTorch's NCCL
// flight recorder (where the user did not set it up).
void WorkerGroupRunner::add_hang_env(const std::string& dir, Worker& w,
                                     std::map<std::string, std::string>& extra) {
  // The dumps go into the run where there is one (they are the run's), else beside
  // the worker's logs; the pipe stays with the logs.
  std::string run_files = observer_ ? observer_->files_dir() : "";
  std::string dump_stem =
      run_files.empty()
          ? dir + "/nccl_trace_rank_"
          : run_files + "/attempt_" + std::to_string(group_.restart_count) + "_nccl_trace_rank_";
  FlightRecorderFiles files = add_flight_recorder_env(dir + "/nccl_trace_rank_", dump_stem,
                                                      w.global_rank, extra, [](const char* name) {
                                                        const char* v = std::getenv(name);
                                                        return std::string(v ? v : "");
                                                      });
  w.flight_recorder_pipe = files.pipe;
  w.flight_recorder_dump = files.dump;
}

ProgressSample WorkerGroupRunner::progress(int local_rank) const {
  auto i = static_cast<size_t>(local_rank);
  ProgressSample s = i < pages_.size() ? pages_[i]->read() : ProgressSample{};
  if (i < outputs_.size()) s.output = outputs_[i]->reads();
  return s;
}

namespace {

// How a worker ends when the stop after a failure ends it: by SIGTERM or SIGKILL, or a
// shell's 128+N for them.
bool ended_by_stop(int exitcode) {
  return exitcode == -SIGTERM || exitcode == -SIGKILL || exitcode == 128 + SIGTERM ||
         exitcode == 128 + SIGKILL;
}

}  // namespace

// A failed worker's record: its error file, the files its output went to, its NCCL
// flight record, and the watchdog's reason where the watchdog reaped it.
void WorkerGroupRunner::record_failure(const Worker& w) {
  failures_.push_back(describe_failure(w.global_rank, w.local_rank, w.pid, w.exit->exitcode,
                                       w.exit->wall_time, w.error_file));
  for (const char* stream : {"stdout", "stderr"}) {
    std::string path = worker_dir(w.local_rank) + "/" + stream + ".log";
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && st.st_size > 0) {
      failures_.back().logs.emplace_back(stream, path);
    }
  }
  if (std::string fr = flight_record_note(w.flight_recorder_dump); !fr.empty()) {
    failures_.back().traceback += "\n" + fr;
  }
  if (!w.reaped_by.empty()) {
    std::string& text = failures_.back().traceback;
    std::string joined = w.reaped_by;
    if (!text.empty()) {
      joined += " (";
      joined += text;
      joined += ")";
    }
    text = std::move(joined);
  }
}

// Exits noticed together are judged together, so workers that failed at the same
// moment all count as failures.
void WorkerGroupRunner::on_exits(const std::vector<ChildExit>& exits) {
  bool was_running = phase_ == Phase::kRunning;
  size_t failures_before = failures_.size();
  for (const ChildExit& e : exits) {
    Worker* w = find_worker(e.pid);
    if (w == nullptr) continue;  // a worker of an earlier attempt
    w->exit = WorkerExit{e.exitcode, std::time(nullptr)};
    if (observer_) {
      observer_->worker_exited(group_.group_rank, w->global_rank, w->local_rank,
                               group_.restart_count, w->exit->exitcode);
    }
    int code = w->exit->exitcode;
    // A worker that exits non-zero on its own while the others are being stopped after a
    // failure failed too (every rank failing shows every rank), not one our signal ended.
    bool failed = code != 0 && (was_running || (!failures_.empty() && !ended_by_stop(code)));
    if (code == 0) {
      w->state = WorkerState::kSucceeded;
    } else if (failed) {
      w->state = WorkerState::kFailed;
      record_failure(*w);
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
  } else {
    watch_stragglers();
  }
}

// Counted from the last exit: once some workers succeeded (and none failed), those
// still running are named when the time is up, once (nothing is stopped).
void WorkerGroupRunner::watch_stragglers() {
  auto after = config_.hang.straggler_warning;
  int finished = 0;
  for (const auto& w : group_.workers) finished += w.state == WorkerState::kSucceeded ? 1 : 0;
  if (phase_ != Phase::kRunning || !failures_.empty() || after.count() <= 0 || finished == 0)
    return;
  straggler_timer_->start(after, [this, after, finished] {
    if (phase_ != Phase::kRunning || !failures_.empty()) return;
    for (const auto& w : group_.workers) {
      if (w.state != WorkerState::kHealthy) continue;
      spdlog::warn(
          "rank {} (local_rank {}, pid {}) is still running {} s after the last of this "
          "node's {} finished rank(s) exited 0; if it is stuck at its end (a deadlock "
          "tearing the process group down, a thread never joined), --hang_timeout "
          "stops it and shows where",
          w.global_rank, w.local_rank, w.pid, after.count() / 1000, finished);
    }
  });
}

Worker* WorkerGroupRunner::find_worker(pid_t pid) {
  for (auto& w : group_.workers)
    if (w.pid == pid && w.state == WorkerState::kHealthy) return &w;
  return nullptr;
}

int WorkerGroupRunner::running_workers() const {
  int n = 0;
  for (const auto& w : group_.workers) n += w.state == WorkerState::kHealthy ? 1 : 0;
  return n;
}

void WorkerGroupRunner::stop(int sig) {
  if (phase_ != Phase::kRunning && phase_ != Phase::kStopping) return;
  phase_ = Phase::kStopping;
  straggler_timer_->cancel();
  signal_running(sig);
  // A stopped worker (SIGSTOP, a frozen job control) acts on the signal only once it
  // runs again: continued, as systemd does, it ends now rather than at SIGKILL.
  if (sig != SIGKILL && inspector_) {
    for (const auto& w : group_.workers) {
      if (w.state == WorkerState::kHealthy && inspector_->look(w.pid).state == 'T') {
        launcher_.signal_group(w.pid, SIGCONT);
      }
    }
  }
  // (Re-)arming the timer: a second stop restarts the grace period.
  grace_timer_->start(config_.grace_period, [this] {
    spdlog::warn("workers did not stop within the grace period; sending SIGKILL");
    signal_running(SIGKILL);
    kill_timer_->start(kKillWait, [this] { abandon_unkillable(); });
  });
}

// SIGKILL takes effect when a process leaves the kernel; one in uninterruptible sleep
// (a hung filesystem, a frozen cgroup) may never. Say so, and go on without it.
void WorkerGroupRunner::abandon_unkillable() {
  for (auto& w : group_.workers) {
    if (w.state != WorkerState::kHealthy) continue;
    ProcessLook look = inspector_ ? inspector_->look(w.pid) : ProcessLook{};
    std::string in = look.wait_channel.empty() ? "" : ", in " + look.wait_channel;
    std::string why = look.state == 'D' ? "it is in uninterruptible sleep (D" + in + ")"
                                        : "state " + std::string(1, look.state) + in;
    spdlog::error("rank {} (pid {}) did not die {} ms after SIGKILL ({}); leaving it behind",
                  w.global_rank, w.pid, kKillWait.count(), why);
    left_behind_.push_back("rank " + std::to_string(w.global_rank) + " (pid " +
                           std::to_string(w.pid) + ", " + why + ")");
    w.state = WorkerState::kStopped;
    w.exit = WorkerExit{-SIGKILL, std::time(nullptr)};
  }
  if (running_workers() == 0 && phase_ == Phase::kStopping) begin_drain();
}

int WorkerGroupRunner::forward(int sig) {
  signal_running(sig);
  return running_workers();
}

void WorkerGroupRunner::watch_timers(TimerWatchdog& watchdog) {
  auto worker_of = [this](pid_t session) -> std::optional<int> {
    for (const auto& w : group_.workers) {
      if (w.state == WorkerState::kHealthy && w.pid == session) return w.local_rank;
    }
    return std::nullopt;
  };
  // The worker itself, or a process of its session (a worker leads its own session).
  auto owner = [worker_of](pid_t pid) -> std::optional<int> {
    if (auto rank = worker_of(pid)) return rank;
    os::ProcStat st;
    if (os::read_proc_stat(pid, st) && st.session != pid) return worker_of(st.session);
    return std::nullopt;
  };
  watchdog.start(owner, [this](const TimerWatchdog::Expiry& e) { reap(e); });
}

// The expired worker's stacks are taken first (where it was is the point of a report),
// then it gets the timer's signal, unless it ended meanwhile.
void WorkerGroupRunner::reap(const TimerWatchdog::Expiry& e) {
  int attempt = group_.restart_count;
  auto finish = [this, e, attempt](std::vector<CapturedStacks> stacks) {
    Worker& w = group_.workers.at(static_cast<size_t>(e.local_rank));
    if (group_.restart_count != attempt || w.state != WorkerState::kHealthy) {
      spdlog::debug("worker watchdog: local_rank {} ended before it was reaped", e.local_rank);
      return;
    }
    WatchdogReport report = watchdog_report(e, stacks.empty() ? CapturedStacks{} : stacks[0]);
    if (w.pid == e.pid) w.reaped_by = report.reaped_by;
    spdlog::warn(
        "worker watchdog: rank {} (local_rank {}) overstayed its timer '{}' by {:.1f} s{}: "
        "sending {} to pid {}",
        w.global_rank, e.local_rank, e.scope, e.overdue_seconds,
        report.where.empty() ? "" : ", in " + report.where, signal_name(e.signal), e.pid);
    if (observer_) {
      observer_->watchdog_reaped(group_.group_rank, w.global_rank, attempt, report.event);
    }
    launcher_.signal_process(e.pid, e.signal);
  };
  if (!inspector_) return finish({});
  const std::string& dir = worker_dir(e.local_rank);
  inspector_->capture({{e.pid, dir + "/python_stacks.txt", dir + "/watchdog_native_stack.txt", {}}},
                      finish);
}

void WorkerGroupRunner::signal_running(int sig) {
  for (const auto& w : group_.workers)
    if (w.state == WorkerState::kHealthy) launcher_.signal_group(w.pid, sig);
}

// Every worker has exited: kill whatever they left behind in their sessions (and
// orphans re-parented to us), then wait for the pipes to close.
void WorkerGroupRunner::begin_drain() {
  phase_ = Phase::kDraining;
  grace_timer_->cancel();
  kill_timer_->cancel();
  straggler_timer_->cancel();
  launcher_.kill_leftovers(guard_ ? guard_->pid() : -1);
  // Every session of this attempt is over: a thousand restarts leave the guard no
  // thousand stale pids to kill should ddprun die later.
  if (guard_) {
    guard_->forget(session_pids());
  }
  drain_timer_->start(kPipeDrainTimeout, [this] {
    for (auto& out : outputs_) out->drain_and_close();
    maybe_done();
  });
  maybe_done();
}

void WorkerGroupRunner::maybe_done() {
  if (phase_ != Phase::kDraining) return;
  for (const auto& out : outputs_)
    if (out->open_pipes() > 0) return;
  drain_timer_->cancel();
  phase_ = Phase::kIdle;
  // The attempt's handlers go with it: an attempt made later never gets this one's.
  on_failure_ = nullptr;
  if (auto done = std::exchange(on_done_, nullptr)) done();
}

}  // namespace ddprun::agent
