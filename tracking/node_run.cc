#include "tracking/node_run.h"

#include <unistd.h>

#include <filesystem>
#include <utility>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "common/host.h"

namespace ddprun::tracking {
namespace {

// How long the streams may go unwatched (inotify wakes the watcher at once).
constexpr std::chrono::milliseconds kStreamInterval{1000};
// The least time between the sample at an attempt's first exit and the one before.
constexpr std::chrono::seconds kEndSampleGap{1};
// An attempt's first system sample, this long after its first worker started (so that
// a short job has one too); then one every RunOptions::system_interval.
constexpr std::chrono::seconds kFirstSample{1};
// How soon what the agent records is in the run (records closer together share one
// transaction).
constexpr std::chrono::milliseconds kRecordDelay{20};

}  // namespace

double wall_seconds() {
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

NodeRun::NodeRun(RunOptions options, std::string agent_id)
    : options_(std::move(options)), agent_id_(std::move(agent_id)) {}

NodeRun::~NodeRun() = default;

void NodeRun::place(std::string run_name, std::string run_dir, std::string node_dir) {
  run_name_ = std::move(run_name);
  run_dir_ = std::move(run_dir);
  node_dir_ = std::move(node_dir);
}

void NodeRun::start_stream_thread() {
  watcher_ = std::make_unique<StreamWatcher>(node_dir_ + "/streams", pass_interval(),
                                             [this](bool final) { stream_pass(final); });
}

void NodeRun::stop_stream_thread() {
  if (!watcher_) return;
  bool pending = false;
  {
    std::lock_guard lock(jobs_mutex_);
    pending = !jobs_.empty();
  }
  // What was recorded goes in before the thread stops: after finished(), complete()
  // took it; a job ended without finished() (an error) asks here.
  if (pending) watcher_->request_final();
  watcher_.reset();  // a final pass asked for runs in its destructor
}

void NodeRun::guarded(const char* what, const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    // Tracking never stops training: say it once, keep the workers running.
    if (!error_reported_.exchange(true)) spdlog::error("tracking: {} failed: {}", what, e.what());
  }
}

void NodeRun::on_stream_thread(std::function<void()> job) {
  if (!watcher_) return job();
  {
    std::lock_guard lock(jobs_mutex_);
    jobs_.push_back(std::move(job));
  }
  watcher_->nudge(kRecordDelay);
}

void NodeRun::record(const Event& e) {
  on_stream_thread([this, e] { guarded("recording an event", [&] { own_.add_event(e); }); });
}

void NodeRun::worker_started(int node, int rank, int local_rank, int attempt, pid_t pid) {
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
  // The agent's pid with its host: the node's identity across rounds (its group rank
  // is only its place in one).
  nlohmann::json d{
      {"local_rank", local_rank}, {"pid", pid}, {"host", host_name()}, {"agent", ::getpid()}};
  record({wall_seconds(), "worker_started", node, rank, attempt, d.dump()});
}

void NodeRun::worker_exited(int node, int rank, int local_rank, int attempt, int exitcode) {
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
  record({wall_seconds(), "worker_exited", node, rank, attempt, d.dump()});
}

bool NodeRun::may_start_workers(bool wait) {
  // The last attempt's streams had their final pass. (The run is on disk since the
  // primary made it; its description need not be written yet.)
  if (!wait && pending_final_ && !watcher_->final_done(*pending_final_)) return false;
  if (pending_final_) {
    watcher_->await_final(*pending_final_);
    pending_final_.reset();
  }
  return true;
}

void NodeRun::attempt_ended() {
  // The attempt's writers are gone: its last pass over their streams. The next
  // attempt's workers start only once it is done (may_start_workers), as it takes
  // every unfinished line for a torn record.
  if (watcher_) pending_final_ = watcher_->request_final();
}

std::string NodeRun::files_dir() {
  if (!files_dir_.empty()) return files_dir_;
  std::string dir = run_dir_ + "/files/" + agent_id_;
  guarded("making the run's files directory", [&] {
    std::filesystem::create_directories(dir);
    files_dir_ = dir;
  });
  return files_dir_;
}

// The files directory goes when the job left nothing in it.
void NodeRun::remove_empty_files_dir() {
  if (files_dir_.empty()) return;
  std::error_code ec;
  std::filesystem::remove(files_dir_, ec);  // only when empty
  std::filesystem::remove(run_dir_ + "/files", ec);
}

// Between the stream thread's passes at most: a system sample is due no later.
std::chrono::milliseconds NodeRun::pass_interval() const {
  return std::min(kStreamInterval, options_.system_interval);
}

// With sample_mutex_ held: the workers to sample, the sample counted as taken now.
std::map<int, pid_t> NodeRun::take_due_sample(std::chrono::steady_clock::time_point now) {
  last_sample_ = now;
  return live_workers_;
}

// On the stream thread, each pass: tracking's own clock for system samples, the first
// a moment into the attempt, then every system_interval.
void NodeRun::sample_when_due() {
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

void NodeRun::sample_system(const std::map<int, pid_t>& workers) {
  if (!sampler_) sampler_ = std::make_unique<SystemSampler>();  // loads NVML: not on the way
  auto values = sampler_->sample(workers);
  guarded("recording system metrics", [&] { own_.add_system(node_, wall_seconds(), values); });
}

bool NodeRun::report_skipped(const IngestStats& stats) {
  if (stats.torn_records == 0 && stats.bad_lines == 0) return false;
  spdlog::warn("tracking: {} torn and {} malformed worker record(s) skipped", stats.torn_records,
               stats.bad_lines);
  nlohmann::json d{{"torn_records", stats.torn_records}, {"bad_lines", stats.bad_lines}};
  guarded("recording an event", [&] {
    own_.add_event({wall_seconds(), "records_skipped", node_, -1, -1, d.dump()});
  });
  return true;
}

void NodeRun::run_jobs() {
  std::vector<std::function<void()>> jobs;
  {
    std::lock_guard lock(jobs_mutex_);
    jobs.swap(jobs_);
  }
  for (auto& job : jobs) job();
  guarded("recording the launcher's records", [&] { own_.flush(); });
}

// What the agent recorded to this node's own stream, then every stream on (into
// run.db, or to the primary), all in one go.
void NodeRun::stream_pass(bool final) {
  if (!final) sample_when_due();
  run_jobs();
  guarded("ingesting worker records", [&] {
    if (report_skipped(counted(pass_streams(final)))) {
      own_.flush();  // the report goes in with them
      counted(pass_streams(final));
    }
  });
}

IngestStats NodeRun::counted(IngestStats stats) {
  records_.fetch_add(static_cast<uint64_t>(stats.records), std::memory_order_relaxed);
  skipped_.fetch_add(static_cast<uint64_t>(stats.torn_records + stats.bad_lines),
                     std::memory_order_relaxed);
  return stats;
}

}  // namespace ddprun::tracking
