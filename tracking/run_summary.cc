#include "tracking/run_summary.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include <nlohmann/json.hpp>

#include "tracking/run_tracker.h"
#include "tracking/run_reading.h"

namespace ddprun::tracking {
namespace {

// A number the run's meta table holds as text; 0 when absent or not a number.
double number(const std::optional<std::string>& text) {
  if (!text || text->empty()) return 0;
  char* end = nullptr;
  double v = std::strtod(text->c_str(), &end);
  return *end == '\0' ? v : 0;
}

}  // namespace

RunSummary summarize_run(RunStore& store, const std::string& id) {
  RunSummary r;
  r.id = id;
  r.name = store.meta("name").value_or(id);
  r.status = effective_status(store);
  r.created = number(store.meta("created"));
  r.finished = number(store.meta("finished"));
  if (auto code = store.meta("exit_code"); code && !code->empty()) {
    r.exit_code = static_cast<int>(number(code));
  }
  r.root_cause = store.meta("root_cause").value_or("");
  r.restarts = static_cast<int>(store.count_events("restart"));
  if (auto round = store.last_event("rendezvous")) {
    auto d = nlohmann::json::parse(round->data_json, nullptr, false);
    if (d.is_object()) {
      // A single-node job's round names no members.
      r.nodes = 1;
      if (d.contains("members") && d["members"].is_array() && !d["members"].empty()) {
        r.nodes = static_cast<int>(d["members"].size());
      }
      if (d.contains("world_size") && d["world_size"].is_number_integer()) {
        r.ranks = d["world_size"].get<int>();
      }
    }
  }
  return r;
}

std::vector<RunSummary> list_runs(const std::string& tracking_dir) {
  std::error_code ec;
  std::vector<RunSummary> runs;
  for (const auto& e : std::filesystem::directory_iterator(tracking_dir, ec)) {
    if (!run_exists(e.path().string())) continue;
    std::string id = e.path().filename().string();
    try {
      RunStore store(e.path().string(), RunStore::Open::kReadOnly);
      settle_run(store);
      runs.push_back(summarize_run(store, id));
    } catch (const std::exception& err) {
      RunSummary bad;
      bad.id = id;
      bad.error = err.what();
      runs.push_back(bad);
    }
  }
  if (ec) throw TrackingError("cannot read the tracking directory " + tracking_dir);
  // Newest first; runs made in the same second by id, for a stable order.
  std::sort(runs.begin(), runs.end(), [](const RunSummary& a, const RunSummary& b) {
    return a.created != b.created ? a.created > b.created : a.id < b.id;
  });
  return runs;
}

double run_duration(const RunSummary& run) {
  if (run.created == 0) return 0;
  double end = run.finished;
  if (end == 0) {
    end = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
              .count();
  }
  return std::max(0.0, end - run.created);
}

}  // namespace ddprun::tracking
