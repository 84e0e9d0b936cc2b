#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/preflight/node_checks.h"

namespace ddprun::testing {

/// A node for preflight whose every value a test sets; by default a healthy one.
struct FakeNodeProbe : agent::NodeProbe {
  static constexpr uint64_t kMiB = uint64_t{1} << 20;
  static constexpr uint64_t kGiB = uint64_t{1} << 30;

  std::map<std::string, uint64_t> free;  // by path; others have plenty
  std::optional<uint64_t> shm = 8 * kGiB;
  uint64_t files = 65536;
  std::optional<uint64_t> memory = 64 * kGiB;
  std::optional<std::vector<agent::GpuState>> gpu_states;  // none: no driver

  std::optional<uint64_t> free_bytes(const std::string& path) override {
    auto it = free.find(path);
    return it == free.end() ? std::optional<uint64_t>(100 * kGiB) : it->second;
  }
  std::optional<uint64_t> shm_free_bytes() override { return shm; }
  uint64_t open_file_limit() override { return files; }
  std::optional<uint64_t> available_memory() override { return memory; }
  std::optional<std::vector<agent::GpuState>> gpus() override { return gpu_states; }
};

}  // namespace ddprun::testing
