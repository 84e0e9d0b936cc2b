#include "tracking/run_tracker.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <utility>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "common/host.h"
#include "tracking/forwarding_run.h"
#include "tracking/primary_run.h"
#include "tracking/run_owner_lock.h"

namespace ddprun::tracking {

RunTracker::RunTracker(Options options)
    : options_(std::move(options)), agent_id_(host_name() + "." + std::to_string(::getpid())) {
  make_writable_dir(options_.tracking_dir, options_.tracking_dir);
  if (!options_.multi_node) run_ = std::make_unique<PrimaryRun>(options_, agent_id_);
}

RunTracker::~RunTracker() {
  if (run_) run_->complete();
}

const std::string& RunTracker::run_dir() const {
  static const std::string none;
  return run_ ? run_->node_dir() : none;
}

std::string RunTracker::primary_run_dir() const {
  return run_ ? run_->job_run_dir() : "";
}

void RunTracker::guarded(const char* what, const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    // Tracking never stops training: say it once, keep the workers running.
    if (!error_reported_) spdlog::error("tracking: {} failed: {}", what, e.what());
    error_reported_ = true;
  }
}

std::string RunTracker::attach(const std::string& address, bool primary) {
  std::string published;
  if (!options_.multi_node) return published;
  if (!primary) {
    awaiting_primary_ = true;  // the primary publishes before it joins a round
    return published;
  }
  guarded("setting up the run", [&] {
    auto run = std::make_unique<PrimaryRun>(options_, agent_id_);
    PrimaryRun& primary_run = *run;
    run_ = std::move(run);  // a run, with or without the others' records
    published = primary_run.serve_agents(address);
  });
  return published;
}

void RunTracker::add_worker_env(int node, int rank, int attempt,
                                std::map<std::string, std::string>& env) {
  if (!run_) return;
  env["DDPRUN_RUN_ID"] = run_->run_name();
  env["DDPRUN_RUN_DIR"] = run_->node_dir();
  env["DDPRUN_TRACKING_STREAM"] = stream_path(run_->node_dir(), node, rank, attempt);
  if (!std::getenv("WANDB_RUN_GROUP")) env["WANDB_RUN_GROUP"] = run_->run_name();
}

bool RunTracker::may_start_workers(int /*attempt*/, bool wait) {
  return !run_ || run_->may_start_workers(wait);
}

void RunTracker::rendezvous_complete(const FormedRound& formed) {
  if (std::exchange(awaiting_primary_, false)) {
    // The primary published its endpoint and run before it joined the round (none:
    // it runs without tracking, and this node's records stay here for a merge).
    guarded("finding the primary agent", [&] {
      run_ = std::make_unique<ForwardingRun>(options_, agent_id_, formed.primary_run);
    });
  }
  if (!run_) return;
  nlohmann::json d{{"round", formed.round},
                   {"world_size", formed.world_size},
                   {"members", formed.members}};
  if (!formed.spares.empty()) d["spares"] = formed.spares;
  for (const auto& q : formed.quarantined) {
    d["quarantined"].push_back({{"node", q.node}, {"until", q.until}, {"reason", q.reason}});
  }
  run_->record_job_event({wall_seconds(), "rendezvous", -1, -1, formed.attempt, d.dump()});
}

void RunTracker::spares_waiting(int attempt, const std::vector<std::string>& spares) {
  if (!run_) return;
  nlohmann::json d{{"spares", spares}};
  run_->record_job_event({wall_seconds(), "spares", -1, -1, attempt, d.dump()});
}

void RunTracker::worker_started(int node, int rank, int local_rank, int attempt, pid_t pid) {
  if (run_) run_->worker_started(node, rank, local_rank, attempt, pid);
}

void RunTracker::worker_exited(int node, int rank, int local_rank, int attempt, int exitcode) {
  if (run_) run_->worker_exited(node, rank, local_rank, attempt, exitcode);
}

void RunTracker::hang(int attempt, const std::string& report_json) {
  // Group rank 0 alone judged every node's reports: sent on to the primary.
  if (run_) run_->record({wall_seconds(), "hang", -1, -1, attempt, report_json});
}

std::optional<RecordCounts> RunTracker::record_counts() const {
  if (!run_) return std::nullopt;
  return run_->record_counts();
}

void RunTracker::links_probed(int attempt, const std::string& report_json) {
  // Group rank 0 alone has every node's figures: sent on to the primary.
  if (run_) run_->record({wall_seconds(), "links", -1, -1, attempt, report_json});
}

// The judging node's own events: sent on to the primary like its workers' exits.
void RunTracker::straggler_named(int attempt, const std::string& data_json) {
  if (run_) run_->record({wall_seconds(), "straggler", -1, -1, attempt, data_json});
}

void RunTracker::straggler_scores(int attempt, const std::string& data_json) {
  if (run_) run_->record({wall_seconds(), "straggler_scores", -1, -1, attempt, data_json});
}

void RunTracker::steps_marked(int node, int attempt, const std::string& data_json) {
  if (run_) run_->record({wall_seconds(), "steps", node, -1, attempt, data_json});
}

void RunTracker::watchdog_reaped(int node, int rank, int attempt, const std::string& data_json) {
  if (run_) run_->record({wall_seconds(), "watchdog", node, rank, attempt, data_json});
}

void RunTracker::round_over(int attempt, const std::string& kind, const std::string& reason) {
  // Every agent learns the same outcome; the primary records it once.
  if (!run_) return;
  nlohmann::json d{{"kind", kind}, {"reason", reason}};
  run_->record_job_event(
      {wall_seconds(), kind == "final" ? "job_stopped" : "restart", -1, -1, attempt, d.dump()});
}

std::string RunTracker::files_dir() { return run_ ? run_->files_dir() : ""; }

void RunTracker::attempt_ended() {
  if (run_) run_->attempt_ended();
}

void RunTracker::finished(const std::string& status, int exitcode, const std::string& root_cause) {
  if (run_) run_->finished(status, exitcode, root_cause);
}

void RunTracker::complete() {
  if (run_) run_->complete();
}

std::string effective_status(RunStore& store) {
  auto described = store.meta("status");
  // Not described yet: alive while its owner holds the run directory.
  if (!described) return RunOwnerLock::held(store.run_dir()) ? "running" : "crashed";
  const std::string& status = *described;
  if (status != "running") return status;
  // Left running: alive only if its owner still is (checked on the owner's host).
  auto pid = store.meta("owner_pid");
  auto host = store.meta("owner_host");
  if (pid && host && *host == host_name() && ::kill(std::stoi(*pid), 0) != 0 && errno == ESRCH) {
    return "crashed";
  }
  return status;
}

}  // namespace ddprun::tracking
