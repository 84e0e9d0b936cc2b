#include "tracking/stream_ingester.h"

#include <filesystem>

namespace ddprun::tracking {

std::string stream_path(const std::string& run_dir, int node, int rank, int attempt) {
  return run_dir + "/streams/n" + std::to_string(node) + ".r" + std::to_string(rank) + ".a" +
         std::to_string(attempt) + ".jsonl";
}

StreamIngester::StreamIngester(RunStore& store, std::string dir, std::string key_prefix)
    : store_(store), dir_(std::move(dir)), key_prefix_(std::move(key_prefix)) {}

StreamIngester::Stats StreamIngester::drain(bool final) {
  Stats stats;
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_ + "/streams", ec)) {
    files.push_back(entry.path());
  }
  if (std::filesystem::exists(dir_ + "/" + kAgentStream, ec)) files.push_back(dir_ + "/" + kAgentStream);
  store_.begin();
  try {
    for (const auto& path : files) {
      StreamOrigin origin;
      std::string name = path.filename();
      if (parse_stream_name(name, origin)) {
        ingest_stream_file(store_, key_prefix_ + name, path, origin, final, stats);
      }
    }
    store_.commit();
  } catch (...) {
    // Disk full or another database error: undo the whole batch (the offsets too, so
    // nothing is skipped next time) and keep what was stored before intact.
    store_.rollback();
    throw;
  }
  totals_ += stats;
  return stats;
}

}  // namespace ddprun::tracking
