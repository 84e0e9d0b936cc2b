#include "tracking/run_summary.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string_view>
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

// The "spares" of a rendezvous or spares event's data.
std::vector<std::string> spare_ids(const nlohmann::json& d) {
  std::vector<std::string> ids;
  if (!d.is_object() || !d.contains("spares") || !d["spares"].is_array()) return ids;
  for (const auto& s : d["spares"])
    if (s.is_string()) ids.push_back(s.get<std::string>());
  return ids;
}

std::optional<double> earliest(std::optional<double> a, std::optional<double> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

std::optional<double> latest(std::optional<double> a, std::optional<double> b) {
  if (!a) return b;
  if (!b) return a;
  return std::max(*a, *b);
}

// A running run's duration so far.
double wall_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Who straggler detection named, each once with its latest figures, in naming order.
std::vector<RunSummary::Straggler> stragglers(RunStore& store) {
  std::vector<RunSummary::Straggler> out;
  for (const auto& e : store.events("straggler")) {
    auto d = nlohmann::json::parse(e.data_json, nullptr, false);
    if (!d.is_object()) continue;
    std::string host = d.value("host", "");
    int node = d.value("node", -1);
    std::string who = d.value("kind", "") == "node"
                          ? "node " + std::to_string(node) + " (" + host + ")"
                          : "rank " + std::to_string(d.value("rank", -1)) + " (node " +
                                std::to_string(node) + ", " + host + ")";
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& s) { return s.who == who; });
    if (it == out.end()) {
      it = out.insert(out.end(), RunSummary::Straggler{who});
      it->first = e.wall;
    }
    it->score = d.value("score", 0.0);
    it->own_s = d.value("own_s", 0.0);
    it->median_s = d.value("median_s", 0.0);
    it->last = e.wall;
    ++it->times;
  }
  return out;
}

}  // namespace

std::vector<AttemptSpan> attempt_spans(RunStore& store) {
  std::vector<AttemptSpan> spans;
  for (const auto& e : store.events("rendezvous")) {  // oldest first
    spans.push_back({e.attempt, e.wall, std::nullopt, false, {}, {}, {}});
  }
  // Each event belongs to the last attempt begun at or before it.
  auto owner = [&spans](double wall) -> AttemptSpan* {
    auto after = std::upper_bound(spans.begin(), spans.end(), wall,
                                  [](double w, const AttemptSpan& s) { return w < s.start; });
    return after == spans.begin() ? nullptr : &*(after - 1);
  };
  auto micros = [](const nlohmann::json& v) -> std::optional<double> {
    if (!v.is_number() || v.get<double>() <= 0) return std::nullopt;
    return v.get<double>() / 1e6;
  };
  // Only the kinds that say how an attempt went are read (a long run holds many more).
  for (const char* kind : {"worker_exited", "hang", "restart", "steps"}) {
    for (const auto& e : store.events(kind)) {
      AttemptSpan* a = owner(e.wall);
      if (a == nullptr) continue;
      std::string_view k = kind;
      if (k == "worker_exited") {
        auto d = nlohmann::json::parse(e.data_json, nullptr, false);
        if (d.is_object() && d.value("exitcode", 0) != 0) a->failed = earliest(a->failed, e.wall);
      } else if (k == "hang") {
        a->hang = true;
        a->failed = earliest(a->failed, e.wall);
      } else if (k == "restart") {
        a->failed = earliest(a->failed, e.wall);
      } else {
        auto d = nlohmann::json::parse(e.data_json, nullptr, false);
        if (!d.is_object() || !d.contains("ranks") || !d["ranks"].is_array()) continue;
        a->checkpoint = latest(a->checkpoint, micros(d.value("checkpoint_dir_us", nlohmann::json())));
        for (const auto& r : d["ranks"]) {
          if (!r.is_object()) continue;
          a->first_step = earliest(a->first_step, micros(r.value("first_us", nlohmann::json())));
          a->last_step = latest(a->last_step, micros(r.value("last_us", nlohmann::json())));
          a->checkpoint = latest(a->checkpoint, micros(r.value("checkpoint_us", nlohmann::json())));
        }
      }
    }
  }
  return spans;
}

std::optional<Goodput> run_goodput(RunStore& store, double created, double end, bool ended) {
  auto spans = attempt_spans(store);
  if (spans.empty()) return std::nullopt;
  return account_goodput(created, end, spans, {.from_launch = true, .job_ended = ended});
}

void count_round_end(const std::string& kind, RoundEndCounts& counts) {
  if (kind == "membership") {
    ++counts.membership_changes;
  } else if (kind == "restart") {
    ++counts.restarts;
  }
}

RunSummary summarize_run(RunStore& store, const std::string& id) {
  RunSummary r;
  r.id = id;
  r.name = store.meta("name").value_or(id);
  r.status = effective_status(store);
  r.created = number(store.meta("created"));
  r.finished = number(store.meta("finished"));
  // A crashed run never said its end: it lasted until its last record, not until now.
  if (r.finished == 0 && r.status == "crashed") r.finished = store.last_record_wall();
  if (auto code = store.meta("exit_code"); code && !code->empty()) {
    r.exit_code = static_cast<int>(number(code));
  }
  r.root_cause = store.meta("root_cause").value_or("");
  // A round's end other than the last is recorded as "restart", its kind in its data.
  RoundEndCounts ends;
  std::vector<Event> round_ends = store.events("restart");
  for (const auto& e : round_ends) {
    auto d = nlohmann::json::parse(e.data_json, nullptr, false);
    count_round_end(d.is_object() ? d.value("kind", "restart") : "restart", ends);
  }
  r.restarts = ends.restarts;
  r.membership_changes = ends.membership_changes;
  r.stragglers = stragglers(store);
  // A running job's accounting reaches now; an ended one's its end.
  double end = r.finished > 0 ? r.finished
                              : (r.status == "running" ? wall_now() : store.last_record_wall());
  r.goodput = run_goodput(store, r.created, end, r.status != "running");
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
      r.spares = spare_ids(d);
    }
  }
  Membership m = read_membership(store.events("rendezvous"), round_ends, r.created);
  r.quarantined = std::move(m.quarantined);
  r.agents = std::move(m.agents);
  r.membership = std::move(m.story);
  // Spares the primary saw come or go while the round ran are newer than its forming.
  auto round = store.last_event("rendezvous");
  if (auto seen = store.last_event("spares"); seen && (!round || seen->wall >= round->wall)) {
    r.spares = spare_ids(nlohmann::json::parse(seen->data_json, nullptr, false));
  }
  return r;
}

std::optional<Goodput> ended_run_goodput(const std::string& run_dir) {
  try {
    RunStore store(run_dir, RunStore::Open::kReadOnly);
    RunSummary r = summarize_run(store, std::filesystem::path(run_dir).filename().string());
    if (r.goodput && r.goodput->steps_seen) return r.goodput;
  } catch (const std::exception&) {
    // The job's outcome stands without it.
  }
  return std::nullopt;
}

std::vector<RunSummary> list_runs(const std::string& tracking_dir) {
  std::error_code ec;
  std::vector<RunSummary> runs;
  for (const auto& e : std::filesystem::directory_iterator(tracking_dir, ec)) {
    std::string dir = e.path().string();
    if (!run_exists(dir)) continue;
    std::string id = e.path().filename().string();
    try {
      if (!std::filesystem::exists(dir + "/run.db")) {
        RunSummary early;  // its launcher died before it wrote the empty run
        early.id = early.name = id;
        early.status = "crashed";
        early.root_cause = "the launcher died as the job started (ddprun runs repair " + id + ")";
        early.needs_repair = true;
        runs.push_back(early);
        continue;
      }
      RunStore store(dir, RunStore::Open::kReadOnly);
      runs.push_back(summarize_run(store, id));
      runs.back().needs_repair = needs_repair(store);
    } catch (const std::exception& err) {
      RunSummary bad;
      bad.id = id;
      bad.error = err.what();
      runs.push_back(bad);
    }
  }
  if (ec == std::errc::no_such_file_or_directory) {
    throw TrackingError("no tracking directory " + tracking_dir +
                        " here: a job keeps its runs where it was launched (its --tracking_dir, "
                        "default ./ddprun-runs); name that directory with --tracking_dir DIR or "
                        "PET_TRACKING_DIR");
  }
  if (ec) throw TrackingError("cannot read the tracking directory " + tracking_dir + ": " + ec.message());
  // Newest first; runs made in the same second by id, for a stable order.
  std::sort(runs.begin(), runs.end(), [](const RunSummary& a, const RunSummary& b) {
    return a.created != b.created ? a.created > b.created : a.id < b.id;
  });
  return runs;
}

std::string find_run(const std::string& tracking_dir, const std::string& ref) {
  bool is_id = !ref.empty() && ref != "." && ref != ".." && ref.find('/') == std::string::npos;
  if (is_id && ref != "latest" && run_exists(tracking_dir + "/" + ref)) return ref;
  std::vector<RunSummary> runs = list_runs(tracking_dir);
  if (ref == "latest") {
    for (const auto& r : runs) {
      if (r.error.empty()) return r.id;
    }
    throw TrackingError("no run in " + tracking_dir + " yet");
  }
  auto pick = [&](auto&& matches) -> std::optional<std::string> {
    std::vector<std::string> ids;
    for (const auto& r : runs) {
      if (matches(r)) ids.push_back(r.id);
    }
    if (ids.empty()) return std::nullopt;
    if (ids.size() == 1) return ids.front();
    std::string list;
    for (const auto& id : ids) list += "\n  " + id;
    throw TrackingError("'" + ref + "' names " + std::to_string(ids.size()) +
                        " runs; give one's id:" + list);
  };
  if (auto id = pick([&](const RunSummary& r) { return r.error.empty() && r.name == ref; })) {
    return *id;
  }
  if (auto id = pick([&](const RunSummary& r) { return r.id.rfind(ref, 0) == 0; })) return *id;
  throw TrackingError("no run '" + ref + "' in " + tracking_dir +
                      " (a run's id, its name, a prefix of its id, or latest)");
}

double run_duration(const RunSummary& run) {
  if (run.created == 0) return 0;
  double end = run.finished == 0 ? wall_now() : run.finished;
  return std::max(0.0, end - run.created);
}

}  // namespace ddprun::tracking
