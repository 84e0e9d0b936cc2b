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

  /// What says whether GPU `index` is fit to run a job; a value the driver does not
  /// give (a card without ECC or row remapping) stays empty.
  struct Health {
    std::optional<unsigned long long> uncorrected_ecc;  // since the driver loaded
    std::optional<bool> retired_pages_pending;          // retirement awaits a reset
    std::optional<bool> row_remap_pending;              // a remap awaits a reset
    std::optional<bool> row_remap_failed;               // a remap could not be made
    std::optional<unsigned long long> clock_event_reasons;  // NVML's bits
  };
  // The clock event (throttle) reasons that mean the GPU runs slow through no choice
  // of the job's: hardware slowdown, thermal slowdown (hardware or software), power brake.
  static constexpr unsigned long long kHwSlowdown = 0x8;
  static constexpr unsigned long long kSwThermalSlowdown = 0x20;
  static constexpr unsigned long long kHwThermalSlowdown = 0x40;
  static constexpr unsigned long long kHwPowerBrakeSlowdown = 0x80;

  /// GPUs the driver sees (all of them, whatever CUDA_VISIBLE_DEVICES says).
  std::optional<int> device_count();
  /// Readings of GPU `index`; nullopt when it cannot be reached.
  std::optional<Reading> read(int index);
  /// Health of GPU `index`; nullopt when NVML cannot open it.
  std::optional<Health> health(int index);

 private:
  struct Api;
  explicit Nvml(std::unique_ptr<Api> api);
  std::unique_ptr<Api> api_;
};

}  // namespace ddprun::os
