#include "agent/device_count.h"

#include <sched.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include "os/nvml.h"

namespace ddprun::agent {
namespace {

int proc_driver_gpu_count() {
  std::error_code ec;
  int n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n;
}

}  // namespace

int count_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return 1;
}

int count_visible_gpus() {
  auto nvml = os::Nvml::load();
  int physical = (nvml ? nvml->device_count() : std::nullopt).value_or(proc_driver_gpu_count());
  const char* env = std::getenv("CUDA_VISIBLE_DEVICES");
  return apply_cuda_visible_devices(env ? std::optional<std::string>(env) : std::nullopt, physical);
}

int apply_cuda_visible_devices(const std::optional<std::string>& visible, int physical) {
  if (!visible) return physical;
  std::set<std::string> seen;
  std::stringstream in(*visible);
  std::string entry;
  int n = 0;
  while (std::getline(in, entry, ',')) {
    size_t b = entry.find_first_not_of(" \t");
    size_t e = entry.find_last_not_of(" \t");
    if (b == std::string::npos) break;
    entry = entry.substr(b, e - b + 1);
    bool valid = false;
    if (entry.rfind("GPU-", 0) == 0 || entry.rfind("MIG-", 0) == 0) {
      valid = n < physical;
    } else {
      char* end = nullptr;
      long idx = std::strtol(entry.c_str(), &end, 10);
      valid = *end == '\0' && idx >= 0 && idx < physical;
    }
    if (!valid || !seen.insert(entry).second) break;
    ++n;
  }
  return n;
}

int count_xpus() {
  std::error_code ec;
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/sys/class/drm", ec)) {
    if (e.path().filename().string().rfind("renderD", 0) != 0) continue;
    std::filesystem::path driver = std::filesystem::read_symlink(e.path() / "device/driver", ec);
    if (ec) continue;
    std::string name = driver.filename().string();
    if (name == "i915" || name == "xe") ++n;
  }
  return n;
}

}  // namespace ddprun::agent
