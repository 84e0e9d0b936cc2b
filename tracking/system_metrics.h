#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "os/nvml.h"

namespace ddprun::tracking {

/// Samples system metrics with W&B's key names: per worker (its whole process tree:
/// the worker's session) "cpu" (percent of one core since the last sample) and
/// "proc.memory.rssMB"; per node "memory_percent"; per GPU (NVML, loaded at run time
/// when present) "gpu.{i}.gpu", "gpu.{i}.memoryAllocated", "gpu.{i}.temp",
/// "gpu.{i}.powerWatts". Reads /proc; never throws. Not thread-safe.
class SystemSampler {
 public:
  SystemSampler();
  ~SystemSampler();
  SystemSampler(const SystemSampler&) = delete;
  SystemSampler& operator=(const SystemSampler&) = delete;

  /// `workers`: global rank -> worker pid (its session id). Returns (key, value) pairs;
  /// per-worker keys are prefixed "rank<r>/"; a worker whose session has no process
  /// (not started yet, or ended) has none.
  std::vector<std::pair<std::string, double>> sample(const std::map<int, pid_t>& workers);

 private:
  std::map<pid_t, std::pair<double, double>> last_cpu_;  // session -> (cpu seconds, wall)
  std::unique_ptr<os::Nvml> nvml_;                       // null without a GPU driver
};

}  // namespace ddprun::tracking
