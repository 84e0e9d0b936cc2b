#include "tracking/run_tracker.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <utility>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "common/host.h"
#include "net/listen.h"

namespace ddprun::tracking {
namespace {

// How long the streams may go unwatched (inotify wakes the watcher at once).
constexpr std::chrono::milliseconds kStreamInterval{1000};
// How long the primary waits for the other agents' last records at the end.
constexpr std::chrono::seconds kLastRecordsWait{5};
// The least time between the sample at an attempt's first exit and the one before.
constexpr std::chrono::seconds kEndSampleGap{1};
// An attempt's first system sample, this long after its first worker started (so that
// a short job has one too); then one every Options::system_interval.
constexpr std::chrono::seconds kFirstSample{1};
// How soon what the agent records is in the run (records closer together share one
// transaction).
constexpr std::chrono::milliseconds kRecordDelay{20};

double now_wall() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void make_writable_dir(const std::string& dir, const std::string& name_in_error) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || ::access(dir.c_str(), W_OK) != 0) {
    throw TrackingError("cannot write the tracking directory " + name_in_error + ": " +
                        (ec ? ec.message() : std::string("permission denied")));
  }
}

}  // namespace

RunTracker::RunTracker(Options options) : options_(std::move(options)) {
  run_name_ = options_.run_id;
  run_dir_ = node_dir_ = options_.tracking_dir + "/" + run_name_;
  agent_id_ = host_name() + "." + std::to_string(::getpid());
  make_writable_dir(options_.tracking_dir, options_.tracking_dir);
  if (!options_.multi_node) become_primary();
}

RunTracker::~RunTracker() {
  if (lookup_store_) lookup_store_->interrupt();  // the early lookup ends now
  if (early_endpoint_.valid()) early_endpoint_.wait();
  complete();
  bool pending = false;
  {
    std::lock_guard lock(jobs_mutex_);
    pending = !jobs_.empty();
  }
  // What was recorded goes in before the thread stops: after finished(), complete()
  // took it; a job ended without finished() (an error) asks here.
  if (watcher_ && pending) watcher_->request_final();
  watcher_.reset();  // a final pass asked for runs in its destructor
}

template <typename F>
void RunTracker::guarded(const char* what, F f) {
  try {
    f();
  } catch (const std::exception& e) {
    // Tracking never stops training: say it once, keep the workers running.
    if (!error_reported_.exchange(true)) spdlog::error("tracking: {} failed: {}", what, e.what());
  }
}

void RunTracker::become_primary() {
  if (primary_) return;
  primary_ = true;
  // A job never writes into an earlier job's run, nor into one that another job
  // starts at the same moment: the same --rdzv_id run again gets <id>.1, <id>.2, ...
  for (int n = 1;; ++n) {
    if (!std::filesystem::exists(run_dir_)) {
      make_writable_dir(run_dir_ + "/streams", options_.tracking_dir);
      // Held until ddprun exits: the run is alive while it is, described or not.
      owner_lock_ = RunOwnerLock::take(run_dir_);
      if (owner_lock_) break;
    }
    run_name_ = options_.run_id + "." + std::to_string(n);
    run_dir_ = node_dir_ = options_.tracking_dir + "/" + run_name_;
  }
  if (run_name_ != options_.run_id) {
    std::cerr << "ddprun: " << options_.tracking_dir << " already holds a run '" << options_.run_id
              << "'; this job's run is '" << run_name_ << "'\n";
  }
  // A run before any worker starts: one killed from then on is listed as crashed (its
  // directory, locked, is one: run_exists). The stream thread writes the empty run.db
  // and describes it (launcher.jsonl, folded into run.db) while the agent goes on to
  // its rendezvous and starts the workers.
  own_.set_path(run_dir_ + "/" + kLauncherStream);
  run_made_ = opened_.get_future().share();
  watcher_ = std::make_unique<StreamWatcher>(run_dir_ + "/streams", pass_interval(),
                                             [this](bool final) { stream_pass(final); });
  describe(now_wall());
  // The first pass at once, beside the rendezvous and the workers' start: it makes
  // run.db and launcher.jsonl with the run's description (making a file is the slow
  // part of a write, on a disk that has just seen many files deleted), and in a
  // multi-node job opens run.db, which the other agents' records go straight into
  // (RecordReceiver).
  watcher_->nudge(std::chrono::milliseconds(0));
}

void RunTracker::describe(double created) {
  on_stream_thread([this, created] {
    nlohmann::json meta{{"run_id", run_name_},
                        {"rdzv_id", options_.run_id},
                        {"name", options_.run_name.empty() ? run_name_ : options_.run_name},
                        {"status", "running"},
                        {"created", std::to_string(created)},
                        {"owner_pid", std::to_string(::getpid())},
                        {"owner_host", host_name()},
                        {"command", options_.command_json},
                        {"config", options_.config_json}};
    own_.add({{"k", "meta"}, {"d", std::move(meta)}});
    own_.add_event({created, "run_started", -1, -1, -1, "{}"});
  });
}

// On the stream thread: run.db, into which each pass folds the run's files from now on.
void RunTracker::open_run() {
  guarded("creating the run", [&] {
    store_ = std::make_unique<RunStore>(run_dir_,
                                        made_ ? RunStore::Open::kNew : RunStore::Open::kCreate);
    ingester_ =
        std::make_unique<StreamIngester>(*store_, run_dir_, "", StreamIngester::Dir::kRun);
  });
  open_tried_ = true;
  opened_.set_value();
}

void RunTracker::become_forwarder(const std::string& run_name) {
  run_name_ = run_name;
  run_dir_ = options_.tracking_dir + "/" + run_name_;
  node_dir_ = run_dir_ + "/parts/" + agent_id_;
  make_writable_dir(node_dir_ + "/streams", options_.tracking_dir);
  nlohmann::json part{{"run_id", run_name_}, {"agent", agent_id_}, {"host", host_name()}};
  std::ofstream(node_dir_ + "/part.json") << part.dump() << "\n";
  own_.set_path(node_dir_ + "/" + kAgentStream);
  own_.open_now();
  forwarder_ = std::make_unique<RecordForwarder>(node_dir_, agent_id_, options_.token);
  watcher_ = std::make_unique<StreamWatcher>(node_dir_ + "/streams", pass_interval(),
                                             [this](bool final) { stream_pass(final); });
}

void RunTracker::attach(store::Store& store, std::unique_ptr<store::Store> own,
                        const std::string& address, bool primary) {
  rendezvous_store_ = &store;
  if (!options_.multi_node) return;
  if (!primary && own) {
    // The primary publishes first thing, so most agents find it already: off the
    // path from the round's completion to the workers' start.
    lookup_store_ = std::move(own);
    early_endpoint_ =
        std::async(std::launch::async, [own = lookup_store_.get(), key = endpoint_key()] {
          try {
            return own->get_now(key).value_or("");
          } catch (const std::exception&) {
            return std::string();  // looked up again after the round
          }
        });
  }
  guarded("setting up the run", [&] {
    if (primary) {
      become_primary();
      run_made_.wait();  // the receiver writes into run.db
      receiver_ = std::make_unique<RecordReceiver>(
          run_dir_, options_.token, options_.listen_all ? "" : net::listen_host_for(address));
      // "<address> <port>\n<run name>": where the others send, and into which run.
      store.set(endpoint_key(),
                address + " " + std::to_string(receiver_->port()) + "\n" + run_name_);
    }  // the others: once the primary has published (rendezvous_complete)
  });
}

void RunTracker::on_stream_thread(std::function<void()> job) {
  if (!watcher_) return job();
  {
    std::lock_guard lock(jobs_mutex_);
    jobs_.push_back(std::move(job));
  }
  watcher_->nudge(kRecordDelay);
}

void RunTracker::record(const Event& e) {
  on_stream_thread([this, e] { guarded("recording an event", [&] { own_.add_event(e); }); });
}

void RunTracker::add_worker_env(int node, int rank, int attempt,
                                std::map<std::string, std::string>& env) {
  env["DDPRUN_RUN_ID"] = run_name_;
  env["DDPRUN_RUN_DIR"] = node_dir_;
  env["DDPRUN_TRACKING_STREAM"] = stream_path(node_dir_, node, rank, attempt);
  if (!std::getenv("WANDB_RUN_GROUP")) env["WANDB_RUN_GROUP"] = run_name_;
}

bool RunTracker::may_start_workers(int /*attempt*/, bool wait) {
  // The last attempt's streams had their final pass. (The run is on disk since
  // become_primary; its description need not be written yet.)
  if (!wait && pending_final_ && !watcher_->final_done(*pending_final_)) return false;
  if (pending_final_) {
    watcher_->await_final(*pending_final_);
    pending_final_.reset();
  }
  return true;
}

void RunTracker::rendezvous_complete(int round, int attempt, int world_size,
                                     const std::vector<std::string>& members) {
  nlohmann::json d{{"round", round}, {"world_size", world_size}, {"members", members}};
  if (primary_) record({now_wall(), "rendezvous", -1, -1, attempt, d.dump()});
  if (options_.multi_node && !primary_ && rendezvous_store_ && !primary_found_) {
    // The primary published its endpoint and run before it joined the round (none:
    // it runs without tracking, and this node's records stay here for a merge).
    guarded("finding the primary agent", [&] {
      std::string published = early_endpoint_.valid() ? early_endpoint_.get() : "";
      if (published.empty()) published = rendezvous_store_->get_now(endpoint_key()).value_or("");
      size_t nl = published.find('\n');
      size_t space = published.rfind(' ', nl);
      if (!forwarder_) {
        become_forwarder(nl == std::string::npos ? options_.run_id : published.substr(nl + 1));
      }
      if (nl != std::string::npos && space != std::string::npos) {
        forwarder_->set_endpoint(published.substr(0, space),
                                 std::stoi(published.substr(space + 1, nl - space - 1)));
        primary_found_ = true;
      }
    });
  }
}

void RunTracker::worker_started(int node, int rank, int local_rank, int attempt, pid_t pid) {
  node_ = node;
  {
    std::lock_guard lock(sample_mutex_);
    if (live_workers_.empty()) {
      attempt_workers_ = 0;
      attempt_started_ = std::chrono::steady_clock::now();
    }
    live_workers_[rank] = pid;
    attempt_workers_ = static_cast<int>(live_workers_.size());
  }
  nlohmann::json d{{"local_rank", local_rank}, {"pid", pid}, {"host", host_name()}};
  record({now_wall(), "worker_started", node, rank, attempt, d.dump()});
}

void RunTracker::worker_exited(int node, int rank, int local_rank, int attempt, int exitcode) {
  // The first exit of an attempt may be the job's end: a last sample of what still
  // runs (the others, the node, its GPUs), at most one a second however fast restarts come.
  std::optional<std::map<int, pid_t>> workers;
  {
    std::lock_guard lock(sample_mutex_);
    auto now = std::chrono::steady_clock::now();
    if (!live_workers_.empty() && live_workers_.size() == static_cast<size_t>(attempt_workers_) &&
        now - attempt_started_ >= options_.unsampled_exit && now - last_sample_ >= kEndSampleGap) {
      workers = take_due_sample(now);
    }
    live_workers_.erase(rank);
  }
  if (workers) {
    // Taken now, while the others end, rather than in the job's last pass, which the
    // job's end waits for.
    on_stream_thread([this, w = std::move(*workers)] { sample_system(w); });
    if (watcher_) watcher_->nudge(std::chrono::milliseconds(0));
  }
  nlohmann::json d{{"local_rank", local_rank}, {"exitcode", exitcode}};
  if (exitcode < 0) d["signal"] = -exitcode;
  record({now_wall(), "worker_exited", node, rank, attempt, d.dump()});
}

void RunTracker::hang(int attempt, const std::string& report_json) {
  if (!primary_) return;  // every agent has the same report; the primary records it once
  record({now_wall(), "hang", -1, -1, attempt, report_json});
}

void RunTracker::watchdog_reaped(int node, int rank, int attempt, const std::string& data_json) {
  record({now_wall(), "watchdog", node, rank, attempt, data_json});
}

void RunTracker::round_over(int attempt, const std::string& kind, const std::string& reason) {
  // Every agent learns the same outcome; the primary records it once.
  if (!primary_) return;
  nlohmann::json d{{"kind", kind}, {"reason", reason}};
  record({now_wall(), kind == "final" ? "job_stopped" : "restart", -1, -1, attempt, d.dump()});
}

std::string RunTracker::files_dir() {
  if (!files_dir_.empty() || (!primary_ && !forwarder_)) return files_dir_;
  std::string dir = run_dir_ + "/files/" + agent_id_;
  guarded("making the run's files directory", [&] {
    std::filesystem::create_directories(dir);
    files_dir_ = dir;
  });
  return files_dir_;
}

// The files directory goes when the job left nothing in it.
void RunTracker::remove_empty_files_dir() {
  if (files_dir_.empty()) return;
  std::error_code ec;
  std::filesystem::remove(files_dir_, ec);  // only when empty
  std::filesystem::remove(run_dir_ + "/files", ec);
}

// Between the stream thread's passes at most: a system sample is due no later.
std::chrono::milliseconds RunTracker::pass_interval() const {
  return std::min(kStreamInterval, options_.system_interval);
}

// With sample_mutex_ held: the workers to sample, the sample counted as taken now.
std::map<int, pid_t> RunTracker::take_due_sample(std::chrono::steady_clock::time_point now) {
  last_sample_ = now;
  return live_workers_;
}

// On the stream thread, each pass: tracking's own clock for system samples, the first
// a moment into the attempt, then every system_interval.
void RunTracker::sample_when_due() {
  std::optional<std::map<int, pid_t>> workers;
  {
    std::lock_guard lock(sample_mutex_);
    auto now = std::chrono::steady_clock::now();
    // Sampled since the attempt started: the next one an interval later; else the first.
    bool due = last_sample_ > attempt_started_
                   ? now - last_sample_ >= options_.system_interval
                   : now - attempt_started_ >= std::min<std::chrono::milliseconds>(
                                                   kFirstSample, options_.system_interval);
    if (!live_workers_.empty() && due) workers = take_due_sample(now);
  }
  if (workers) sample_system(*workers);
}

void RunTracker::sample_system(const std::map<int, pid_t>& workers) {
  if (!sampler_) sampler_ = std::make_unique<SystemSampler>();  // loads NVML: not on the way
  auto values = sampler_->sample(workers);
  guarded("recording system metrics", [&] { own_.add_system(node_, now_wall(), values); });
}

bool RunTracker::report_skipped(const IngestStats& stats) {
  if (stats.torn_records == 0 && stats.bad_lines == 0) return false;
  spdlog::warn("tracking: {} torn and {} malformed worker record(s) skipped", stats.torn_records,
               stats.bad_lines);
  nlohmann::json d{{"torn_records", stats.torn_records}, {"bad_lines", stats.bad_lines}};
  guarded("recording an event", [&] {
    own_.add_event({now_wall(), "records_skipped", node_, -1, -1, d.dump()});
  });
  return true;
}

void RunTracker::run_jobs() {
  std::vector<std::function<void()>> jobs;
  {
    std::lock_guard lock(jobs_mutex_);
    jobs.swap(jobs_);
  }
  for (auto& job : jobs) job();
  guarded("recording the launcher's records", [&] { own_.flush(); });
}

// The launcher's records to its stream, then (the primary, once it described the
// run) every stream into run.db, or (the others) on to the primary, all in one go.
void RunTracker::stream_pass(bool final) {
  if (primary_ && !image_tried_) {
    image_tried_ = true;
    guarded("creating the run", [&] { made_ = make_empty_run(run_dir_); });
  }
  if (!final) sample_when_due();
  run_jobs();
  if (primary_ && !open_tried_) open_run();
  if (!ingester_ && !forwarder_) return;  // the run not made (yet)
  guarded("ingesting worker records", [&] {
    auto ingest = [&] { return ingester_ ? ingester_->drain(final) : forwarder_->pass(final); };
    if (report_skipped(ingest())) {
      own_.flush();  // the report goes in with them
      ingest();
    }
  });
}

void RunTracker::attempt_ended() {
  if (forwarder_) forwarder_->hurry();  // a pass waiting on a silent primary gives up sooner
  // The attempt's writers are gone: its last pass over their streams. The next
  // attempt's workers start only once it is done (may_start_workers), as it takes
  // every unfinished line for a torn record.
  if (watcher_) pending_final_ = watcher_->request_final();
}

void RunTracker::finished(const std::string& status, int exitcode, const std::string& root_cause) {
  remove_empty_files_dir();
  if (forwarder_) {
    // Send the last events too, then (the watcher stopped: this thread owns the
    // forwarder now) let the primary know this agent is done.
    forwarder_->hurry();
    watcher_->final_pass();
    watcher_.reset();
    bool answered = forwarder_->bye();
    if (answered && forwarder_->all_sent()) {
      std::error_code ec;
      std::filesystem::remove_all(node_dir_, ec);
      std::filesystem::remove(run_dir_ + "/parts", ec);  // only when empty
      if (std::filesystem::is_empty(run_dir_, ec)) std::filesystem::remove(run_dir_, ec);
    } else {
      std::cerr << "ddprun: the primary agent " << forwarder_->endpoint()
                << " did not receive all of this node's tracking records; they are in " << node_dir_
                << ". Fold them into the run later with:\n  ddprun runs merge " << node_dir_
                << " --tracking_dir <the run's tracking directory>\n";
    }
    return;
  }
  if (!primary_) return;
  // The other agents' last records (their final events) arrive about now.
  if (receiver_) receiver_->wait_for_agents(kLastRecordsWait);
  nlohmann::json d{{"status", status}, {"exitcode", exitcode}, {"root_cause", root_cause}};
  on_stream_thread([this, d = d.dump(), wall = now_wall(), status, exitcode, root_cause] {
    guarded("finishing the run", [&] {
      own_.add_event({wall, "run_finished", -1, -1, -1, d});
      nlohmann::json end{{"exit_code", std::to_string(exitcode)},
                         {"root_cause", root_cause},
                         {"finished", std::to_string(wall)},
                         {"status", status}};
      own_.add({{"k", "meta"}, {"d", std::move(end)}});
    });
  });
  pending_final_.reset();
  if (!watcher_) return;  // the run could not be made
  // The thread ends while the agent ends the rest; the last pass is complete()'s, on
  // this thread, with nothing to wake.
  watcher_->stop_soon();
  finishing_ = true;
}

void RunTracker::complete() {
  if (!finishing_) return;
  finishing_ = false;
  watcher_->finish_here();
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
