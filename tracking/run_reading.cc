#include "tracking/run_reading.h"

#include <filesystem>

#include "tracking/record_lines.h"
#include "tracking/run_owner_lock.h"
#include "tracking/stream_ingester.h"

namespace ddprun::tracking {

bool run_exists(const std::string& run_dir) {
  std::error_code ec;
  if (std::filesystem::exists(run_dir + "/run.db", ec)) return true;
  if (!std::filesystem::is_directory(run_dir + "/streams", ec) || RunOwnerLock::held(run_dir)) {
    return false;
  }
  try {
    make_empty_run(run_dir);
    return true;
  } catch (const TrackingError&) {
    return false;  // not ours to write: not a run this reader can show
  }
}

void settle_run(RunStore& reading) {
  try {
    std::string dir = reading.run_dir();
    std::error_code ec;
    auto size = std::filesystem::file_size(dir + "/" + kLauncherStream, ec);
    if (ec || reading.stream_offset(kLauncherStream) >= static_cast<int64_t>(size)) return;
    if (RunOwnerLock::held(dir)) return;
    RunStore writing(dir, RunStore::Open::kExisting);
    StreamIngester(writing, dir, "", StreamIngester::Dir::kRun).drain(true);
  } catch (const std::exception&) {
    // Read-only, or a database error: the reader shows what run.db holds.
  }
}

}  // namespace ddprun::tracking
