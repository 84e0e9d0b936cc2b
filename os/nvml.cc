#include "os/nvml.h"

#include <dlfcn.h>
#include <unistd.h>

#include "os/shared_library.h"

namespace ddprun::os {
namespace {

// NVML's C structures, as its header declares them.
struct NvmlUtilization {
  unsigned int gpu;
  unsigned int memory;
};
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

}  // namespace

struct Nvml::Api {
  void* lib = nullptr;
  int (*count)(unsigned int*) = nullptr;
  int (*handle)(unsigned int, void**) = nullptr;
  int (*utilization)(void*, NvmlUtilization*) = nullptr;
  int (*memory)(void*, NvmlMemory*) = nullptr;
  int (*temperature)(void*, int, unsigned int*) = nullptr;
  int (*power)(void*, unsigned int*) = nullptr;
  // nvmlDeviceGetTotalEccErrors(device, errorType, counterType, count)
  int (*ecc)(void*, int, int, unsigned long long*) = nullptr;
  int (*retired_pending)(void*, int*) = nullptr;  // nvmlEnableState_t
  int (*remapped_rows)(void*, unsigned int*, unsigned int*, unsigned int*, unsigned int*) = nullptr;
  int (*clock_events)(void*, unsigned long long*) = nullptr;
  int (*shutdown)() = nullptr;

  ~Api() {
    if (shutdown) shutdown();
    if (lib) ::dlclose(lib);
  }
};

bool driver_present(const std::string& root) {
  for (const char* path : {"dev/nvidiactl", "proc/driver/nvidia", "dev/dxg"}) {
    if (::access((root + (root.ends_with('/') ? "" : "/") + path).c_str(), F_OK) == 0) return true;
  }
  return false;
}

std::unique_ptr<Nvml> Nvml::load() {
  if (!driver_present()) return nullptr;
  void* lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return nullptr;
  auto init = library_function<int (*)()>(lib, "nvmlInit_v2");
  auto api = std::make_unique<Api>();
  api->lib = lib;
  api->count = library_function<decltype(api->count)>(lib, "nvmlDeviceGetCount_v2");
  api->handle = library_function<decltype(api->handle)>(lib, "nvmlDeviceGetHandleByIndex_v2");
  api->utilization =
      library_function<decltype(api->utilization)>(lib, "nvmlDeviceGetUtilizationRates");
  api->memory = library_function<decltype(api->memory)>(lib, "nvmlDeviceGetMemoryInfo");
  api->temperature = library_function<decltype(api->temperature)>(lib, "nvmlDeviceGetTemperature");
  api->power = library_function<decltype(api->power)>(lib, "nvmlDeviceGetPowerUsage");
  api->ecc = library_function<decltype(api->ecc)>(lib, "nvmlDeviceGetTotalEccErrors");
  api->retired_pending = library_function<decltype(api->retired_pending)>(
      lib, "nvmlDeviceGetRetiredPagesPendingStatus");
  api->remapped_rows =
      library_function<decltype(api->remapped_rows)>(lib, "nvmlDeviceGetRemappedRows");
  // Renamed in CUDA 12 (the old name stays exported as an alias).
  api->clock_events =
      library_function<decltype(api->clock_events)>(lib, "nvmlDeviceGetCurrentClocksEventReasons");
  if (!api->clock_events) {
    api->clock_events = library_function<decltype(api->clock_events)>(
        lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
  }
  if (!init || !api->count || init() != 0) return nullptr;  // ~Api closes the library
  api->shutdown = library_function<decltype(api->shutdown)>(lib, "nvmlShutdown");
  return std::unique_ptr<Nvml>(new Nvml(std::move(api)));
}

Nvml::Nvml(std::unique_ptr<Api> api) : api_(std::move(api)) {}
Nvml::~Nvml() = default;

std::optional<int> Nvml::device_count() {
  unsigned int n = 0;
  if (api_->count(&n) != 0) return std::nullopt;
  return static_cast<int>(n);
}

std::optional<Nvml::Reading> Nvml::read(int index) {
  void* h = nullptr;
  if (!api_->handle || api_->handle(static_cast<unsigned int>(index), &h) != 0) return std::nullopt;
  Reading r;
  NvmlUtilization util{};
  if (api_->utilization && api_->utilization(h, &util) == 0) r.utilization_percent = util.gpu;
  NvmlMemory mem{};
  if (api_->memory && api_->memory(h, &mem) == 0 && mem.total > 0) {
    r.memory_used_percent = 100.0 * static_cast<double>(mem.used) / static_cast<double>(mem.total);
  }
  unsigned int temp = 0;
  if (api_->temperature && api_->temperature(h, 0, &temp) == 0) r.temperature_celsius = temp;
  unsigned int milliwatts = 0;
  if (api_->power && api_->power(h, &milliwatts) == 0) r.power_watts = milliwatts / 1000.0;
  return r;
}

std::optional<Nvml::Health> Nvml::health(int index) {
  void* h = nullptr;
  if (!api_->handle || api_->handle(static_cast<unsigned int>(index), &h) != 0) return std::nullopt;
  // NVML's enums, as its header declares them.
  constexpr int kUncorrected = 1;  // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
  constexpr int kVolatile = 0;     // NVML_VOLATILE_ECC: since the driver loaded
  constexpr int kEnabled = 1;      // NVML_FEATURE_ENABLED
  Health health;
  unsigned long long errors = 0;
  if (api_->ecc && api_->ecc(h, kUncorrected, kVolatile, &errors) == 0) health.uncorrected_ecc = errors;
  int pending = 0;
  if (api_->retired_pending && api_->retired_pending(h, &pending) == 0) {
    health.retired_pages_pending = pending == kEnabled;
  }
  unsigned int corrected = 0, uncorrected = 0, remap_pending = 0, remap_failed = 0;
  if (api_->remapped_rows &&
      api_->remapped_rows(h, &corrected, &uncorrected, &remap_pending, &remap_failed) == 0) {
    health.row_remap_pending = remap_pending != 0;
    health.row_remap_failed = remap_failed != 0;
  }
  unsigned long long reasons = 0;
  if (api_->clock_events && api_->clock_events(h, &reasons) == 0) health.clock_event_reasons = reasons;
  return health;
}

}  // namespace ddprun::os
