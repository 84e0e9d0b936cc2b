#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/preflight/preflight_options.h"
#include "os/nvml.h"

namespace ddprun::agent {

/// One check that failed: which, and what it found ("/data: 12 MiB free, ...").
struct Finding {
  std::string check;
  std::string problem;
};

/// One GPU as preflight sees it.
struct GpuState {
  int index = 0;                             // the driver's
  std::optional<os::Nvml::Health> health;  // nullopt: NVML cannot open it
};

/// What the checks look at, read from the OS in one place (PosixNodeProbe); tests give
/// made-up values.
class NodeProbe {
 public:
  virtual ~NodeProbe() = default;
  /// Bytes an unprivileged writer may still write on the file system that holds
  /// `path`, or would hold it once made (its nearest existing ancestor); nullopt when
  /// it cannot be read.
  virtual std::optional<uint64_t> free_bytes(const std::string& path) = 0;
  /// The same for /dev/shm; nullopt when there is none.
  virtual std::optional<uint64_t> shm_free_bytes() = 0;
  /// The soft limit of open files the workers inherit.
  virtual uint64_t open_file_limit() = 0;
  /// MemAvailable; nullopt when it cannot be read.
  virtual std::optional<uint64_t> available_memory() = 0;
  /// Every GPU the driver sees; nullopt where there is no NVIDIA driver or NVML.
  virtual std::optional<std::vector<GpuState>> gpus() = 0;
};

/// Reads this machine.
class PosixNodeProbe : public NodeProbe {
 public:
  std::optional<uint64_t> free_bytes(const std::string& path) override;
  std::optional<uint64_t> shm_free_bytes() override;
  uint64_t open_file_limit() override;
  std::optional<uint64_t> available_memory() override;
  std::optional<std::vector<GpuState>> gpus() override;

 private:
  std::unique_ptr<os::Nvml> nvml_;  // loaded by the first look at the GPUs
  bool nvml_tried_ = false;
};

/// Runs the enabled built-in checks: what failed, in the order of the checks (empty:
/// the node is fit). A value the probe cannot read fails nothing.
std::vector<Finding> check_node(const PreflightOptions& options, NodeProbe& probe);

/// "1.5 GiB", "12 MiB", for messages.
std::string byte_size(uint64_t bytes);

}  // namespace ddprun::agent
