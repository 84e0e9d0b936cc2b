#pragma once

#include <memory>
#include <optional>

namespace ddprun::os {

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

  /// The library, initialised; null where there is none or it does not start.
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
