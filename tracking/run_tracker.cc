#include "tracking/run_tracker.h"

#include <signal.h>
#include <unistd.h>
#include "common/host.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

namespace ddprun::tracking {
namespace {

double now_wall() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

RunTracker::RunTracker(Options options) : options_(std::move(options)) {
  run_dir_ = options_.tracking_dir + "/" + options_.run_id;
  std::error_code ec;
  std::filesystem::create_directories(run_dir_ + "/streams", ec);
  if (ec || ::access(run_dir_.c_str(), W_OK) != 0) {
    throw TrackingError("cannot write the tracking directory " + options_.tracking_dir + ": " +
                        (ec ? ec.message() : std::string("permission denied")));
  }
  store_ = std::make_unique<RunStore>(run_dir_, true);
  ingester_ = std::make_unique<StreamIngester>(*store_, run_dir_);
  store_->set_meta("run_id", options_.run_id);
  store_->set_meta("name", options_.run_name.empty() ? options_.run_id : options_.run_name);
  store_->set_meta("status", "running");
  store_->set_meta("created", std::to_string(now_wall()));
  store_->set_meta("owner_pid", std::to_string(::getpid()));
  store_->set_meta("owner_host", host_name());
  store_->set_meta("command", options_.command_json);
  store_->set_meta("config", options_.config_json);
  event("run_started", -1, -1, -1, "{}");
}

template <typename F>
void RunTracker::guarded(const char* what, F f) {
  try {
    f();
  } catch (const std::exception& e) {
    // Tracking never stops training: say it once, keep the workers running.
    if (!error_reported_) spdlog::error("tracking: {} failed: {}", what, e.what());
    error_reported_ = true;
  }
}

void RunTracker::event(const std::string& kind, int node, int rank, int attempt,
                       const std::string& data) {
  guarded("recording an event", [&] {
    store_->add_event({now_wall(), kind, node, rank, attempt, data});
  });
}

void RunTracker::add_worker_env(int node, int rank, int attempt,
                                std::map<std::string, std::string>& env) {
  env["DDPRUN_RUN_ID"] = options_.run_id;
  env["DDPRUN_RUN_DIR"] = run_dir_;
  env["DDPRUN_TRACKING_STREAM"] = stream_path(run_dir_, node, rank, attempt);
  if (!std::getenv("WANDB_RUN_GROUP")) env["WANDB_RUN_GROUP"] = options_.run_id;
  if (!options_.python_dir.empty()) {
    const char* old = std::getenv("PYTHONPATH");
    env["PYTHONPATH"] = options_.python_dir + (old && *old ? std::string(":") + old : "");
  }
}

void RunTracker::rendezvous_complete(int round, int attempt, int world_size,
                                     const std::vector<std::string>& members) {
  nlohmann::json d{{"round", round}, {"world_size", world_size}, {"members", members}};
  event("rendezvous", -1, -1, attempt, d.dump());
}

void RunTracker::worker_started(int node, int rank, int local_rank, int attempt, pid_t pid) {
  node_ = node;
  live_workers_[rank] = pid;
  nlohmann::json d{{"local_rank", local_rank}, {"pid", pid}};
  event("worker_started", node, rank, attempt, d.dump());
}

void RunTracker::worker_exited(int node, int rank, int local_rank, int attempt, int exitcode) {
  live_workers_.erase(rank);
  nlohmann::json d{{"local_rank", local_rank}, {"exitcode", exitcode}};
  if (exitcode < 0) d["signal"] = -exitcode;
  event("worker_exited", node, rank, attempt, d.dump());
}

void RunTracker::round_over(int attempt, const std::string& kind, const std::string& reason) {
  nlohmann::json d{{"kind", kind}, {"reason", reason}};
  event(kind == "final" ? "job_stopped" : "restart", -1, -1, attempt, d.dump());
}

void RunTracker::sample_system(bool force) {
  auto now = std::chrono::steady_clock::now();
  if (live_workers_.empty() || (!force && now - last_sample_ < options_.system_interval)) return;
  last_sample_ = now;
  guarded("recording system metrics",
          [&] { store_->add_system_metrics(node_, now_wall(), sampler_.sample(live_workers_)); });
}

void RunTracker::poll(bool attempt_over) {
  if (!attempt_over) sample_system(false);
  guarded("ingesting worker records", [&] {
    auto stats = ingester_->drain(attempt_over);
    if (stats.torn_records > 0 || stats.bad_lines > 0) {
      nlohmann::json d{{"torn_records", stats.torn_records}, {"bad_lines", stats.bad_lines}};
      spdlog::warn("tracking: {} torn and {} malformed worker record(s) skipped",
                   stats.torn_records, stats.bad_lines);
      store_->add_event({now_wall(), "records_skipped", -1, -1, -1, d.dump()});
    }
  });
}

void RunTracker::finished(const std::string& status, int exitcode, const std::string& root_cause) {
  // The agent drained every stream when the last attempt ended (poll(true)).
  guarded("finishing the run", [&] {
    nlohmann::json d{{"status", status}, {"exitcode", exitcode}, {"root_cause", root_cause}};
    store_->add_event({now_wall(), "run_finished", -1, -1, -1, d.dump()});
    store_->set_meta("exit_code", std::to_string(exitcode));
    store_->set_meta("root_cause", root_cause);
    store_->set_meta("finished", std::to_string(now_wall()));
    store_->set_meta("status", status);
  });
}

std::string effective_status(RunStore& store) {
  std::string status = store.meta("status").value_or("unknown");
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
