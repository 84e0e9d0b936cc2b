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
    RunStore reading(run_dir, RunStore::Open::kReadOnly);
    return needs_repair(reading);
  } catch (const std::exception&) {
    return false;  // unreadable: said where it is read
  }
}

bool needs_repair(RunStore& reading) {
  try {
    const std::string& dir = reading.run_dir();
    std::error_code ec;
    auto size = std::filesystem::file_size(dir + "/" + kLauncherStream, ec);
    if (ec || RunOwnerLock::held(dir)) return false;
    return reading.stream_offset(kLauncherStream) < static_cast<int64_t>(size);
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace ddprun::tracking
