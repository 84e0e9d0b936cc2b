#include "tracking/run_reading.h"

#include <filesystem>

#include "tracking/record_lines.h"
#include "tracking/run_owner_lock.h"

namespace ddprun::tracking {

bool run_exists(const std::string& run_dir) {
  std::error_code ec;
  if (std::filesystem::exists(run_dir + "/run.db", ec)) return true;
  return std::filesystem::is_directory(run_dir + "/streams", ec) && !RunOwnerLock::held(run_dir);
}

bool needs_repair(const std::string& run_dir) {
  try {
    std::error_code ec;
    if (RunOwnerLock::held(run_dir)) return false;
    if (!std::filesystem::exists(run_dir + "/run.db", ec)) return run_exists(run_dir);
    auto size = std::filesystem::file_size(run_dir + "/" + kLauncherStream, ec);
    if (ec) return false;
    RunStore reading(run_dir, RunStore::Open::kReadOnly);
    return reading.stream_offset(kLauncherStream) < static_cast<int64_t>(size);
  } catch (const std::exception&) {
    return false;  // unreadable: said where it is read
  }
}

}  // namespace ddprun::tracking
