#include "tracking/part_merge.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tracking/record_link.h"
#include "tracking/run_owner_lock.h"
#include "tracking/run_reading.h"
#include "tracking/run_store.h"
#include "tracking/run_tracker.h"
#include "tracking/stream_ingester.h"

namespace ddprun::tracking {

MergeResult merge_part(const std::string& part_dir,
                       const std::optional<std::string>& tracking_dir) {
  std::ifstream in(part_dir + "/part.json");
  auto part = nlohmann::json::parse(in, nullptr, false);
  if (!in || !part.is_object() || !part.contains("run_id") || !part["run_id"].is_string() ||
      !part.contains("agent") || !part["agent"].is_string() || !valid_agent_id(part["agent"].get<std::string>())) {
    throw TrackingError(part_dir + " is not a node's tracking records (no valid part.json)");
  }
  MergeResult result;
  result.run_id = part["run_id"];
  auto parent = std::filesystem::absolute(part_dir).lexically_normal();
  if (parent.filename().empty()) parent = parent.parent_path();
  result.run_dir = tracking_dir ? *tracking_dir + "/" + result.run_id
                                : parent.parent_path().parent_path().string();
  if (!run_exists(result.run_dir)) {
    throw TrackingError("no run '" + result.run_id + "' at " + result.run_dir +
                        " to merge into (pass --tracking_dir with the run's tracking directory)");
  }
  RunStore store(result.run_dir, RunStore::Open::kExisting);
  StreamIngester ingester(store, part_dir, part["agent"].get<std::string>() + "/");
  result.stats = ingester.drain(true);
  return result;
}

MergeResult recover_run(const std::string& run_dir) {
  MergeResult result;
  result.run_dir = run_dir;
  {
    if (RunOwnerLock::held(run_dir)) {
      throw TrackingError("the run at " + run_dir + " is still running; its launcher writes it");
    }
    RunStore store(run_dir, RunStore::Open::kCreate);  // a launcher killed before run.db
    result.run_id = store.meta("run_id").value_or(run_dir);
    if (effective_status(store) == "running") {
      throw TrackingError("run '" + result.run_id + "' is still running; its agent ingests it");
    }
    StreamIngester own(store, run_dir, "", StreamIngester::Dir::kRun);
    result.stats = own.drain(true);
  }
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(run_dir + "/parts", ec)) {
    if (std::filesystem::exists(e.path() / "part.json")) {
      result.stats += merge_part(e.path(), std::nullopt).stats;
    }
  }
  return result;
}

}  // namespace ddprun::tracking
