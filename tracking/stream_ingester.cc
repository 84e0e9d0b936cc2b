#include "tracking/stream_ingester.h"

#include <unistd.h>

namespace ddprun::tracking {

std::string stream_path(const std::string& run_dir, int node, int rank, int attempt) {
  return run_dir + "/streams/n" + std::to_string(node) + ".r" + std::to_string(rank) + ".a" +
         std::to_string(attempt) + ".jsonl";
}

StreamIngester::StreamIngester(RunStore& store, std::string dir, std::string key_prefix,
                               Dir kind)
    : store_(store), dir_(std::move(dir)), key_prefix_(std::move(key_prefix)), kind_(kind) {}

StreamIngester::Stats StreamIngester::drain(bool final) {
  Stats stats;
  auto files = stream_files(dir_);
  std::string launcher = dir_ + "/" + kLauncherStream;
  bool with_launcher = kind_ == Dir::kRun && ::access(launcher.c_str(), F_OK) == 0;
  if (files.empty() && !with_launcher) return stats;  // no transaction for nothing
  store_.begin();
  try {
    if (with_launcher) {
      StreamOrigin own;
      own.launcher = true;
      ingest_stream_file(store_, kLauncherStream, launcher, own, final, stats);
    }
    for (const auto& [name, path] : files) {
      StreamOrigin origin;
      parse_stream_name(name, origin);
      ingest_stream_file(store_, key_prefix_ + name, path, origin, final, stats);
    }
    store_.commit();
  } catch (...) {
    // Disk full or another database error: undo the whole batch (the offsets too, so
    // nothing is skipped next time) and keep what was stored before intact.
    store_.rollback();
    throw;
  }
  return stats;
}

}  // namespace ddprun::tracking
