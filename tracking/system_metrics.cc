#include "tracking/system_metrics.h"

#include <unistd.h>

#include <chrono>

#include "os/meminfo.h"
#include "os/nvml.h"
#include "os/process_table.h"

namespace ddprun::tracking {
namespace {

struct TreeUsage {
  double cpu_seconds = 0;
  double rss_mb = 0;
  int processes = 0;
};

// Sums CPU time and RSS over every process of the given sessions (the workers and
// whatever they started: data loaders, compilers...). The children's times hold
// helpers already reaped (short-lived ones). Only this process's descendants are read:
// ddprun is a subreaper, so nothing a worker started leaves its tree.
std::map<pid_t, TreeUsage> usage_by_session(const std::map<int, pid_t>& workers) {
  std::map<pid_t, TreeUsage> out;
  for (const auto& [rank, sid] : workers) out[sid];
  static const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  static const double page_mb = static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
  os::for_each_descendant([&](const os::ProcStat& st) {
    auto it = out.find(st.session);
    // A zombie holds no memory and no longer runs: a rank whose process exited (not yet
    // reaped) has no figure rather than 0.
    if (it == out.end() || st.state == 'Z') return;
    double jiffies = static_cast<double>(st.utime + st.stime + st.cutime + st.cstime);
    it->second.cpu_seconds += jiffies / ticks;
    it->second.rss_mb += static_cast<double>(st.rss_pages) * page_mb;
    ++it->second.processes;
  });
  return out;
}

double memory_percent() {
  auto memory = os::read_meminfo();
  if (!memory || memory->total == 0) return 0;
  return 100.0 * static_cast<double>(memory->total - memory->available) /
         static_cast<double>(memory->total);
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

SystemSampler::SystemSampler() : nvml_(os::Nvml::load()) {}

SystemSampler::~SystemSampler() = default;

std::vector<std::pair<std::string, double>> SystemSampler::sample(
    const std::map<int, pid_t>& workers) {
  std::vector<std::pair<std::string, double>> out;
  double now = now_seconds();
  auto usage = usage_by_session(workers);
  for (const auto& [rank, sid] : workers) {
    const TreeUsage& u = usage[sid];
    // No process in the session: not set up yet, or gone. Nothing to say, not zero.
    if (u.processes == 0) continue;
    std::string prefix = "rank" + std::to_string(rank) + "/";
    out.emplace_back(prefix + "proc.memory.rssMB", u.rss_mb);
    auto last = last_cpu_.find(sid);
    if (last != last_cpu_.end() && now > last->second.second) {
      out.emplace_back(prefix + "cpu",
                       100.0 * (u.cpu_seconds - last->second.first) / (now - last->second.second));
    }
    last_cpu_[sid] = {u.cpu_seconds, now};
  }
  out.emplace_back("memory_percent", memory_percent());
  int gpus = nvml_ ? nvml_->device_count().value_or(0) : 0;
  for (int i = 0; i < gpus; ++i) {
    auto r = nvml_->read(i);
    if (!r) continue;
    std::string g = "gpu." + std::to_string(i) + ".";
    if (r->utilization_percent) out.emplace_back(g + "gpu", *r->utilization_percent);
    if (r->memory_used_percent) out.emplace_back(g + "memoryAllocated", *r->memory_used_percent);
    if (r->temperature_celsius) out.emplace_back(g + "temp", *r->temperature_celsius);
    if (r->power_watts) out.emplace_back(g + "powerWatts", *r->power_watts);
  }
  return out;
}

}  // namespace ddprun::tracking
