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
  // Named checks add to the defaults, -NAME takes one away; `none` in the list starts
  // from nothing instead.
  std::vector<std::string> items;
  std::istringstream list(given);
  for (std::string item; std::getline(list, item, ',');) items.push_back(item);
  if (given.back() == ',') items.emplace_back();
  if (std::find(items.begin(), items.end(), "none") == items.end()) {
    for (Check c : kDefault) add(c);
  }
  for (const std::string& item : items) {
    if (item == "none") continue;
    if (item == "all") {
      for (Check c : kDefault) add(c);
      continue;
    }
    bool remove = !item.empty() && item[0] == '-';
    std::string name = remove ? item.substr(1) : item;
    auto named = std::find_if(std::begin(kAll), std::end(kAll),
                              [&](Check c) { return name == agent::check_name(c); });
    if (named == std::end(kAll)) {
      fail_value(v.source("preflight"), given,
                 "expected a comma-separated list of checks to add to the defaults (disk, shm, "
                 "nofile, memory, gpu, clock, link), -NAME to leave one out (-shm), all, or "
                 "none (none,disk: disk only); '" +
                     item + "' is not one of them");
    }
    if (remove) {
      p.checks.erase(std::remove(p.checks.begin(), p.checks.end(), *named), p.checks.end());
    } else {
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
