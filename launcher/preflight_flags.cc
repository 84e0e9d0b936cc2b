#include "launcher/preflight_flags.h"

#include <algorithm>
#include <sstream>

#include "common/error.h"
#include "common/value_parsers.h"

namespace ddprun::launcher {

void fill_preflight_options(const Values& v, int local_workers, agent::PreflightOptions& p) {
  using agent::Check;
  constexpr Check kAll[] = {Check::kDisk, Check::kShm, Check::kOpenFiles, Check::kMemory};
  const std::string& given = v.str("preflight");
  p.checks.clear();
  if (given.empty()) fail_value(v.source("preflight"), given, "expected all, none or a list of checks");
  if (given == "all") {
    p.checks.assign(std::begin(kAll), std::end(kAll));
  } else if (given != "none") {
    std::istringstream items(given);
    for (std::string item; std::getline(items, item, ',');) {
      auto named = std::find_if(std::begin(kAll), std::end(kAll),
                                [&](Check c) { return item == agent::check_name(c); });
      if (named == std::end(kAll)) {
        fail_value(v.source("preflight"), given,
                   "expected all, none or a comma-separated list of disk, shm, nofile, memory "
                   "('" + item + "' is none of them)");
      }
      if (std::find(p.checks.begin(), p.checks.end(), *named) == p.checks.end()) {
        p.checks.push_back(*named);
      }
    }
  }
  p.local_workers = local_workers;
  p.health_command = v.str("health_check");
  p.health_timeout =
      parse_seconds(v.source("health_check_timeout"), v.str("health_check_timeout"), false);
}

}  // namespace ddprun::launcher
