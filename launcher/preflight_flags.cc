#include "launcher/preflight_flags.h"

#include <algorithm>
#include <sstream>
#include <vector>

#include "common/error.h"
#include "common/value_parsers.h"

namespace ddprun::launcher {

namespace {

// CUDA_VISIBLE_DEVICES as the driver's indices: nullopt where it is unset or names GPUs
// otherwise (UUIDs, MIG instances): every GPU is checked then.
std::optional<std::vector<int>> visible_indices(const std::optional<std::string>& list) {
  if (!list) return std::nullopt;
  std::vector<int> indices;
  std::istringstream items(*list);
  for (std::string item; std::getline(items, item, ',');) {
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos ||
        item.size() > 4) {
      return std::nullopt;
    }
    indices.push_back(std::stoi(item));
  }
  return indices;
}

}  // namespace

void fill_preflight_options(const Values& v, int local_workers,
                            const std::optional<std::string>& cuda_visible_devices,
                            agent::PreflightOptions& p) {
  using agent::Check;
  constexpr Check kDefault[] = {Check::kDisk, Check::kShm, Check::kOpenFiles, Check::kMemory,
                                Check::kGpu, Check::kClock};
  constexpr Check kAll[] = {Check::kDisk, Check::kShm,   Check::kOpenFiles, Check::kMemory,
                            Check::kGpu,  Check::kClock, Check::kLink};
  const std::string& given = v.str("preflight");
  p.checks.clear();
  if (given.empty()) fail_value(v.source("preflight"), given, "expected all, none or a list of checks");
  auto add = [&](Check c) {
    if (std::find(p.checks.begin(), p.checks.end(), c) == p.checks.end()) p.checks.push_back(c);
  };
  if (given != "none") {
    std::istringstream items(given);
    for (std::string item; std::getline(items, item, ',');) {
      if (item == "all") {
        for (Check c : kDefault) add(c);
        continue;
      }
      auto named = std::find_if(std::begin(kAll), std::end(kAll),
                                [&](Check c) { return item == agent::check_name(c); });
      if (named == std::end(kAll)) {
        fail_value(v.source("preflight"), given,
                   "expected all, none or a comma-separated list of all, disk, shm, nofile, "
                   "memory, gpu, clock, link ('" + item + "' is none of them)");
      }
      add(*named);
    }
  }
  p.local_workers = local_workers;
  p.visible_gpus = visible_indices(cuda_visible_devices);
  p.health_command = v.str("health_check");
  p.health_timeout =
      parse_seconds(v.source("health_check_timeout"), v.str("health_check_timeout"), false);
}

}  // namespace ddprun::launcher
