#include "agent/metrics/job_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "agent/metrics/exposition.h"

namespace ddprun::agent {
namespace {

double boot_time_seconds() {
  std::ifstream stat("/proc/stat");
  for (std::string line; std::getline(stat, line);) {
    if (line.rfind("btime ", 0) == 0) return std::stod(line.substr(6));
  }
  return 0;
}

double open_fds() {
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return 0;
  double n = 0;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(d);
  return n - 1;  // the directory's own descriptor
}

}  // namespace

ProcessMetrics read_process_metrics() {
  ProcessMetrics p;
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (std::getline(in, line)) {
    // Fields after the command's closing parenthesis, from field 3 (state) on.
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    std::vector<std::string> f;
    for (std::string w; rest >> w;) f.push_back(w);
    double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
    auto field = [&](size_t n) { return n - 3 < f.size() ? std::stod(f[n - 3]) : 0.0; };
    if (tick > 0 && f.size() > 22) {
      p.cpu_seconds = (field(14) + field(15)) / tick;
      p.start_time_seconds = boot_time_seconds() + field(22) / tick;
      p.virtual_bytes = field(23);
      p.resident_bytes = field(24) * static_cast<double>(::sysconf(_SC_PAGESIZE));
    }
  }
  p.open_fds = open_fds();
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0) p.max_fds = static_cast<double>(limit.rlim_cur);
  return p;
}

namespace {

void gauge(Exposition& e, const char* name, const char* help, double value) {
  e.family(name, "gauge", help);
  e.sample(name, {}, value);
}

void counter(Exposition& e, const char* name, const char* help, double value) {
  e.family(name, "counter", help);
  e.sample(name, {}, value);
}

// One sample per rank of this node, where `value` has one.
template <typename F>
void per_rank(Exposition& e, const JobMetrics& job, const char* name, const char* help, F value) {
  e.family(name, "gauge", help);
  for (const auto& r : job.ranks) {
    if (std::optional<double> v = value(r)) e.sample(name, {{"rank", std::to_string(r.rank)}}, *v);
  }
}

// The job, its round and what happened to it, as this agent sees them.
void render_job(Exposition& e, const JobMetrics& job) {
  e.family("ddprun_info", "gauge", "The job this agent runs, in its labels (always 1).");
  e.sample("ddprun_info",
           {{"run_id", job.run_id}, {"backend", job.backend}, {"version", job.version},
            {"host", job.host}},
           1);
  gauge(e, "ddprun_node_rank",
        "This node's group rank in the current round (-1 before the first, and while it waits "
        "as a spare).",
        job.node_rank);
  gauge(e, "ddprun_spare", "1 while this agent waits as a hot spare for a place in the job.",
        job.spare ? 1 : 0);
  gauge(e, "ddprun_round", "The rendezvous round this node is in (-1 before the first).",
        job.round);
  gauge(e, "ddprun_nodes", "Nodes in the current round.", job.nodes);
  gauge(e, "ddprun_world_size", "Ranks (workers) in the current round, on every node.",
        job.world_size);
  counter(e, "ddprun_restarts_total",
          "Times the job's workers were restarted after a failure (TORCHELASTIC_RESTART_COUNT).",
          job.restarts);
  counter(e, "ddprun_membership_changes_total",
          "Rounds re-formed because nodes came, went or were lost (not counted as restarts).",
          job.membership_changes);
  gauge(e, "ddprun_workers_running", "This node's workers running now.", job.workers_running);
  gauge(e, "ddprun_spares_waiting",
        "Hot spare nodes waiting for a place, as this agent last heard.", job.spares);
  counter(e, "ddprun_hangs_total", "Hangs detected in this job, seen from this node.",
          static_cast<double>(job.hangs));
}

void render_ranks(Exposition& e, const JobMetrics& job) {
  if (job.ranks.empty()) return;
  using Rank = JobMetrics::Rank;
  per_rank(e, job, "ddprun_rank_seconds_since_progress",
           "Seconds since each of this node's ranks last made progress (output, tracking records, "
           "steps).",
           [](const Rank& r) { return std::optional<double>(r.seconds_since_progress); });
  per_rank(e, job, "ddprun_rank_step", "The last step each of this node's ranks reported.",
           [](const Rank& r) {
             return r.step ? std::optional<double>(static_cast<double>(*r.step)) : std::nullopt;
           });
  per_rank(e, job, "ddprun_rank_own_seconds_per_step",
           "Each of this node's ranks' own work per step in the last straggler window: the "
           "step's time less the time it waited for the other ranks.",
           [](const Rank& r) { return r.own_seconds_per_step; });
  per_rank(e, job, "ddprun_rank_straggler_score",
           "Each of this node's ranks' own work per step over the job's median (1: typical; "
           "above --straggler_threshold: a straggler).",
           [](const Rank& r) { return r.straggler_score; });
}

void render_time(Exposition& e, const JobMetrics& job) {
  if (job.goodput) {
    gauge(e, "ddprun_goodput_ratio",
          "Productive time over the job's time so far, as this node saw it (its ranks' steps).",
          job.goodput->ratio);
    e.family("ddprun_goodput_seconds", "gauge",
             "The job's time so far by category (startup, productive, lost, hang_wait, restart, "
             "shutdown), as "
             "this node saw it.");
    for (const auto& [category, seconds] : job.goodput->seconds) {
      e.sample("ddprun_goodput_seconds", {{"category", category}}, seconds);
    }
  }
  e.family("ddprun_step_seconds", "histogram",
           "Time between consecutive steps of this node's ranks, per step.");
  const auto& s = job.step_seconds;
  e.histogram("ddprun_step_seconds", {}, s.bounds, s.counts, s.above, s.sum);
}

// The stores this agent serves, and the records it took into the run.
void render_services(Exposition& e, const JobMetrics& job) {
  if (!job.stores.empty()) {
    e.family("ddprun_store_connections", "gauge", "Open connections to a store this agent serves.");
    for (const auto& st : job.stores) {
      e.sample("ddprun_store_connections", {{"store", st.role}}, static_cast<double>(st.connections));
    }
    e.family("ddprun_store_requests_total", "counter",
             "Requests a store this agent serves has answered, by operation.");
    for (const auto& st : job.stores) {
      for (const auto& [op, n] : st.requests) {
        e.sample("ddprun_store_requests_total", {{"store", st.role}, {"op", op}},
                 static_cast<double>(n));
      }
    }
  }
  if (job.records) {
    counter(e, "ddprun_tracking_records_total",
            "Workers' tracking records this node took into the run.",
            static_cast<double>(job.records->first));
    counter(e, "ddprun_tracking_records_skipped_total",
            "Workers' tracking records this node skipped: torn by a dying writer, or malformed.",
            static_cast<double>(job.records->second));
  }
}

void render_process(Exposition& e, const ProcessMetrics& process) {
  counter(e, "process_cpu_seconds_total", "User and system CPU time of ddprun, in seconds.",
          process.cpu_seconds);
  gauge(e, "process_resident_memory_bytes", "Resident memory of ddprun, in bytes.",
        process.resident_bytes);
  gauge(e, "process_virtual_memory_bytes", "Virtual memory of ddprun, in bytes.",
        process.virtual_bytes);
  gauge(e, "process_open_fds", "Open file descriptors of ddprun.", process.open_fds);
  gauge(e, "process_max_fds", "ddprun's limit of open file descriptors.", process.max_fds);
  gauge(e, "process_start_time_seconds", "When ddprun started, in seconds since the epoch.",
        process.start_time_seconds);
}

}  // namespace

std::string render_metrics(const JobMetrics& job, const ProcessMetrics& process) {
  Exposition e;
  render_job(e, job);
  render_ranks(e, job);
  render_time(e, job);
  render_services(e, job);
  render_process(e, process);
  return e.text();
}

}  // namespace ddprun::agent
