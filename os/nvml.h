#pragma once

#include <memory>
#include <optional>
#include <string>

namespace ddprun::os {

/// Whether `root` has an NVIDIA driver NVML can talk to: its control device, its /proc
/// entry, or WSL's GPU device.
bool driver_present(const std::string& root = "/");

/// NVIDIA's management library, loaded at run time (dlopen) so ddprun runs and builds
/// on machines without a GPU or its driver. Not thread-safe.
class Nvml {
 public:
  /// What one GPU reports now; a reading the driver does not give stays empty.
  struct Reading {
    std::optional<double> utilization_percent;
    std::optional<double> memory_used_percent;
    std::optional<double> temperature_celsius;
    std::optional<double> power_watts;
  };

  /// The library, initialised; null where there is none or it does not start. Looked
  /// for only where an NVIDIA driver is (driver_present): elsewhere the loader would
  /// try some 80 paths for a library that could not start anyway.
  static std::unique_ptr<Nvml> load();
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  /// GPUs the driver sees (all of them, whatever CUDA_VISIBLE_DEVICES says).
  std::optional<int> device_count();
  /// Readings of GPU `index`; nullopt when it cannot be reached.
  std::optional<Reading> read(int index);

 private:
  struct Api;
  explicit Nvml(std::unique_ptr<Api> api);
  std::unique_ptr<Api> api_;
};

}  // namespace ddprun::os
