#include "tracking/system_metrics.h"

#include <dirent.h>
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace ddprun::tracking {
namespace {

struct TreeUsage {
  double cpu_seconds = 0;
  double rss_mb = 0;
};

// Sums CPU time and RSS over every process of the given sessions (the workers and
// whatever they started: data loaders, compilers...).
std::map<pid_t, TreeUsage> usage_by_session(const std::map<int, pid_t>& workers) {
  std::map<pid_t, TreeUsage> out;
  for (const auto& [rank, sid] : workers) out[sid];
  static const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  static const double page_mb = static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return out;
  while (dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    std::ifstream in("/proc/" + std::string(e->d_name) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream fields(stat.substr(paren + 2));
    std::string f[24];
    for (auto& x : f) fields >> x;
    // After ')': state ppid pgrp session ... utime(11) stime(12) cutime(13) cstime(14)
    // ... rss(21). The c* times hold children already reaped (short-lived helpers).
    pid_t session = static_cast<pid_t>(std::atol(f[3].c_str()));
    auto it = out.find(session);
    if (it == out.end()) continue;
    double jiffies = 0;
    for (int i = 11; i <= 14; ++i) jiffies += std::atof(f[i].c_str());
    it->second.cpu_seconds += jiffies / ticks;
    it->second.rss_mb += std::atof(f[21].c_str()) * page_mb;
  }
  ::closedir(dir);
  return out;
}

double memory_percent() {
  std::ifstream in("/proc/meminfo");
  double total = 0;
  double available = 0;
  std::string key;
  double value;
  std::string unit;
  while (in >> key >> value >> unit) {
    if (key == "MemTotal:") total = value;
    if (key == "MemAvailable:") available = value;
  }
  return total > 0 ? 100.0 * (total - available) / total : 0;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// NVML's C API, resolved at run time so machines without a GPU need nothing.
struct SystemSampler::Nvml {
  struct Utilization {
    unsigned int gpu;
    unsigned int memory;
  };
  struct Memory {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
  };
  void* lib = nullptr;
  int (*count)(unsigned int*) = nullptr;
  int (*handle)(unsigned int, void**) = nullptr;
  int (*utilization)(void*, Utilization*) = nullptr;
  int (*memory)(void*, Memory*) = nullptr;
  int (*temperature)(void*, int, unsigned int*) = nullptr;
  int (*power)(void*, unsigned int*) = nullptr;
  int (*shutdown)() = nullptr;
};

SystemSampler::SystemSampler() {
  void* lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return;
  auto init = reinterpret_cast<int (*)()>(::dlsym(lib, "nvmlInit_v2"));
  auto* n = new Nvml;
  n->lib = lib;
  n->count = reinterpret_cast<decltype(n->count)>(::dlsym(lib, "nvmlDeviceGetCount_v2"));
  n->handle = reinterpret_cast<decltype(n->handle)>(::dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
  n->utilization =
      reinterpret_cast<decltype(n->utilization)>(::dlsym(lib, "nvmlDeviceGetUtilizationRates"));
  n->memory = reinterpret_cast<decltype(n->memory)>(::dlsym(lib, "nvmlDeviceGetMemoryInfo"));
  n->temperature =
      reinterpret_cast<decltype(n->temperature)>(::dlsym(lib, "nvmlDeviceGetTemperature"));
  n->power = reinterpret_cast<decltype(n->power)>(::dlsym(lib, "nvmlDeviceGetPowerUsage"));
  n->shutdown = reinterpret_cast<decltype(n->shutdown)>(::dlsym(lib, "nvmlShutdown"));
  if (!init || !n->count || !n->handle || init() != 0) {
    ::dlclose(lib);
    delete n;
    return;
  }
  nvml_ = n;
}

SystemSampler::~SystemSampler() {
  if (!nvml_) return;
  if (nvml_->shutdown) nvml_->shutdown();
  ::dlclose(nvml_->lib);
  delete nvml_;
}

std::vector<std::pair<std::string, double>> SystemSampler::sample(
    const std::map<int, pid_t>& workers) {
  std::vector<std::pair<std::string, double>> out;
  double now = now_seconds();
  auto usage = usage_by_session(workers);
  for (const auto& [rank, sid] : workers) {
    const TreeUsage& u = usage[sid];
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
  if (nvml_) {
    unsigned int n = 0;
    if (nvml_->count(&n) == 0) {
      for (unsigned int i = 0; i < n; ++i) {
        void* h = nullptr;
        if (nvml_->handle(i, &h) != 0) continue;
        std::string g = "gpu." + std::to_string(i) + ".";
        Nvml::Utilization util{};
        if (nvml_->utilization && nvml_->utilization(h, &util) == 0) out.emplace_back(g + "gpu", util.gpu);
        Nvml::Memory mem{};
        if (nvml_->memory && nvml_->memory(h, &mem) == 0 && mem.total > 0) {
          out.emplace_back(g + "memoryAllocated", 100.0 * static_cast<double>(mem.used) / mem.total);
        }
        unsigned int temp = 0;
        if (nvml_->temperature && nvml_->temperature(h, 0, &temp) == 0) out.emplace_back(g + "temp", temp);
        unsigned int milliwatts = 0;
        if (nvml_->power && nvml_->power(h, &milliwatts) == 0) {
          out.emplace_back(g + "powerWatts", milliwatts / 1000.0);
        }
      }
    }
  }
  return out;
}

}  // namespace ddprun::tracking
