#include "agent/preflight/node_checks.h"

#include <sys/resource.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "os/meminfo.h"

namespace ddprun::agent {

std::string byte_size(uint64_t bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  size_t unit = 0;
  while (v >= 1024 && unit + 1 < std::size(kUnits)) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, v < 10 && unit > 0 ? "%.1f %s" : "%.0f %s", v, kUnits[unit]);
  return buf;
}

namespace {

std::optional<uint64_t> statvfs_free(const std::string& path) {
  struct statvfs s {};
  if (::statvfs(path.c_str(), &s) != 0) return std::nullopt;
  return static_cast<uint64_t>(s.f_bavail) * s.f_frsize;
}

}  // namespace

std::optional<uint64_t> PosixNodeProbe::free_bytes(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path.empty() ? "." : path, ec);
  if (ec) return std::nullopt;
  // A directory the job makes later: the file system it will be made on.
  while (!std::filesystem::exists(p, ec) && p.has_parent_path() && p != p.parent_path()) {
    p = p.parent_path();
  }
  return statvfs_free(p.string());
}

std::optional<uint64_t> PosixNodeProbe::shm_free_bytes() {
  std::error_code ec;
  if (!std::filesystem::is_directory("/dev/shm", ec)) return std::nullopt;
  return statvfs_free("/dev/shm");
}

uint64_t PosixNodeProbe::open_file_limit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return RLIM_INFINITY;
  return r.rlim_cur;
}

std::optional<uint64_t> PosixNodeProbe::available_memory() {
  auto memory = os::read_meminfo();
  if (!memory) return std::nullopt;
  return memory->available;
}

std::optional<std::vector<GpuState>> PosixNodeProbe::gpus() {
  if (!nvml_tried_) {
    nvml_tried_ = true;
    nvml_ = os::Nvml::load();  // null where there is no driver
  }
  if (!nvml_) return std::nullopt;
  auto count = nvml_->device_count();
  if (!count) return std::nullopt;
  std::vector<GpuState> gpus;
  for (int i = 0; i < *count; ++i) gpus.push_back({i, nvml_->health(i)});
  return gpus;
}

namespace {

// What is wrong with one GPU, each thing in a finding of its own.
void check_gpu(const GpuState& gpu, std::vector<Finding>& found) {
  std::string name = "GPU " + std::to_string(gpu.index) + ": ";
  if (!gpu.health) {
    found.push_back({"gpu", name + "NVML cannot open it (nvidia-smi says more; the GPU may "
                                   "have fallen off the bus)"});
    return;
  }
  const os::Nvml::Health& h = *gpu.health;
  if (h.uncorrected_ecc.value_or(0) > 0) {
    found.push_back({"gpu", name + std::to_string(*h.uncorrected_ecc) +
                                " uncorrectable ECC error(s) since the driver loaded"});
  }
  if (h.retired_pages_pending.value_or(false)) {
    found.push_back({"gpu", name + "retired memory pages wait for a GPU reset"});
  }
  if (h.row_remap_failed.value_or(false)) {
    found.push_back({"gpu", name + "a memory row remap failed: the GPU needs service"});
  } else if (h.row_remap_pending.value_or(false)) {
    found.push_back({"gpu", name + "a memory row remap waits for a GPU reset"});
  }
  using N = os::Nvml;
  constexpr std::pair<unsigned long long, const char*> kSlow[] = {
      {N::kHwSlowdown, "hardware slowdown"},
      {N::kHwThermalSlowdown, "hardware thermal slowdown"},
      {N::kHwPowerBrakeSlowdown, "power brake"},
      {N::kSwThermalSlowdown, "thermal slowdown"}};
  std::string slow;
  for (const auto& [bit, what] : kSlow) {
    if ((h.clock_event_reasons.value_or(0) & bit) == 0) continue;
    if (!slow.empty()) slow += ", ";
    slow += what;
  }
  if (!slow.empty()) found.push_back({"gpu", name + "its clocks are held down (" + slow + ")"});
}

}  // namespace

std::vector<Finding> check_node(const PreflightOptions& o, NodeProbe& probe) {
  std::vector<Finding> found;
  auto enabled = [&](Check c) { return std::find(o.checks.begin(), o.checks.end(), c) != o.checks.end(); };
  if (enabled(Check::kDisk)) {
    for (const auto& dir : o.write_dirs) {
      auto free = probe.free_bytes(dir);
      if (free && *free < PreflightOptions::kMinFreeDisk) {
        found.push_back({"disk", dir + ": " + byte_size(*free) + " free, the job needs at least " +
                                     byte_size(PreflightOptions::kMinFreeDisk) + " to write its logs and run"});
      }
    }
  }
  if (enabled(Check::kShm)) {
    uint64_t need = std::min(PreflightOptions::kShmCap,
                             PreflightOptions::kShmPerWorker * static_cast<uint64_t>(std::max(1, o.local_workers)));
    auto free = probe.shm_free_bytes();
    if (free && *free < need) {
      found.push_back({"shm", "/dev/shm: " + byte_size(*free) + " free, " +
                                  std::to_string(o.local_workers) + " worker(s) need " +
                                  byte_size(need) +
                                  " (DataLoader workers and NCCL pass data through it; in a "
                                  "container: --shm-size)"});
    }
  }
  if (enabled(Check::kOpenFiles)) {
    uint64_t limit = probe.open_file_limit();
    if (limit < PreflightOptions::kMinOpenFiles) {
      found.push_back({"nofile", "open files limited to " + std::to_string(limit) + " (ulimit -n), the workers need at least " +
                                     std::to_string(PreflightOptions::kMinOpenFiles)});
    }
  }
  if (enabled(Check::kMemory)) {
    auto available = probe.available_memory();
    if (available && *available < PreflightOptions::kMinAvailableMemory) {
      found.push_back({"memory", byte_size(*available) + " of memory available, at least " +
                                     byte_size(PreflightOptions::kMinAvailableMemory) + " needed"});
    }
  }
  if (enabled(Check::kGpu)) {
    if (auto gpus = probe.gpus()) {
      std::vector<int> wanted;
      if (o.visible_gpus) {
        wanted = *o.visible_gpus;
      } else {
        for (const auto& g : *gpus) wanted.push_back(g.index);
      }
      for (int index : wanted) {
        auto gpu = std::find_if(gpus->begin(), gpus->end(),
                                [&](const GpuState& g) { return g.index == index; });
        if (gpu == gpus->end()) {
          found.push_back({"gpu", "CUDA_VISIBLE_DEVICES names GPU " + std::to_string(index) +
                                      "; the driver sees " + std::to_string(gpus->size())});
        } else {
          check_gpu(*gpu, found);
        }
      }
    }
  }
  return found;
}

}  // namespace ddprun::agent
