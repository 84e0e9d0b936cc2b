#include "dashboard/run_data.h"

#include <algorithm>
#include <array>
#include <map>
#include <tuple>
#include <vector>

#include "common/node_names.h"

namespace ddprun::dashboard {
namespace {

using nlohmann::json;

// A JSON text stored in the run, parsed; text that is not JSON stays a string.
json parsed(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  return j.is_discarded() ? json(text) : j;
}

// Indexes of the points to keep: all when they fit, else per bucket the first, lowest
// and highest (in order), and the last point.
std::vector<size_t> keep(const std::vector<ChartPoint>& points, size_t max_points) {
  std::vector<size_t> out;
  size_t n = points.size();
  if (max_points == 0 || n <= max_points) {
    for (size_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  size_t buckets = std::max<size_t>(1, max_points / 3);
  for (size_t b = 0; b < buckets; ++b) {
    size_t lo = n * b / buckets;
    size_t hi = n * (b + 1) / buckets;
    if (lo == hi) continue;
    size_t low = lo;
    size_t high = lo;
    for (size_t i = lo; i < hi; ++i) {
      if (points[i].value < points[low].value) low = i;
      if (points[i].value > points[high].value) high = i;
    }
    std::array<size_t, 3> picked{lo, low, high};
    std::sort(picked.begin(), picked.end());
    for (size_t i : picked) {
      if (out.empty() || out.back() != i) out.push_back(i);
    }
  }
  if (out.back() != n - 1) out.push_back(n - 1);
  return out;
}

json stragglers_json(const std::vector<tracking::RunSummary::Straggler>& named) {
  json out = json::array();
  for (const auto& s : named) {
    out.push_back({{"who", s.who}, {"score", s.score}, {"own_s", s.own_s}, {"median_s", s.median_s},
                   {"first", s.first}, {"last", s.last}, {"times", s.times}});
  }
  return out;
}

// Each node by its id and by the name an operator knows it by (node_name()).
json quarantined_json(const std::vector<tracking::RunSummary::Quarantined>& nodes,
                      const std::vector<std::string>& known) {
  json out = json::array();
  for (const auto& q : nodes) {
    out.push_back({{"node", q.node},
                   {"name", node_name(q.node, known)},
                   {"until", q.until},
                   {"reason", q.reason}});
  }
  return out;
}

json names_json(const std::vector<std::string>& ids, const std::vector<std::string>& known) {
  json out = json::array();
  for (const auto& id : ids) out.push_back(node_name(id, known));
  return out;
}

}  // namespace

json summary_json(const tracking::RunSummary& run) {
  if (!run.error.empty()) return {{"id", run.id}, {"error", run.error}};
  std::vector<std::string> known = run.agents;
  known.insert(known.end(), run.spares.begin(), run.spares.end());
  return {{"id", run.id},
          {"name", run.name},
          {"status", run.status},
          {"created", run.created},
          {"finished", run.finished > 0 ? json(run.finished) : json(nullptr)},
          {"duration", tracking::run_duration(run)},
          {"nodes", run.nodes},
          {"ranks", run.ranks},
          {"spares", run.spares},
          {"spare_names", names_json(run.spares, known)},
          {"quarantined", quarantined_json(run.quarantined, known)},
          {"membership", run.membership},
          {"stragglers", stragglers_json(run.stragglers)},
          {"goodput", run.goodput ? json::parse(tracking::goodput_json(*run.goodput)) : json()},
          {"restarts", run.restarts},
          {"membership_changes", run.membership_changes},
          {"exit_code", run.exit_code ? json(*run.exit_code) : json(nullptr)},
          {"root_cause", run.root_cause},
          {"needs_repair", run.needs_repair}};
}

json run_json(tracking::RunStore& store, const std::string& id,
              const std::map<std::string, int64_t>& counts) {
  json j = summary_json(tracking::summarize_run(store, id));
  j["command"] = parsed(store.meta("command").value_or("null"));
  j["launch_config"] = parsed(store.meta("config").value_or("null"));
  j["metrics"] = counts;
  auto entries = [](const std::vector<tracking::RunStore::Entry>& list) {
    json out = json::array();
    for (const auto& e : list) {
      out.push_back({{"node", e.node},
                     {"rank", e.rank},
                     {"attempt", e.attempt},
                     {"key", e.key},
                     {"value", parsed(e.value_json)}});
    }
    return out;
  };
  j["config"] = entries(store.configs());
  j["summary"] = entries(store.summaries());
  j["events"] = json::array();
  for (const auto& e : store.events()) {
    j["events"].push_back({{"wall", e.wall},
                           {"kind", e.kind},
                           {"node", e.node},
                           {"rank", e.rank},
                           {"attempt", e.attempt},
                           {"data", parsed(e.data_json)}});
  }
  return j;
}

json metric_json(const std::string& key, const RunCache::Lines& lines, size_t max_points) {
  if (lines.empty()) return nullptr;
  json series = json::array();
  size_t total = 0;
  for (const auto& [id, line] : lines) {
    json kept = json::array();
    for (size_t i : keep(line.points, max_points)) {
      const ChartPoint& p = line.points[i];
      kept.push_back(json::array({p.x, p.value, p.wall}));
    }
    total += line.points.size();
    series.push_back({{"rank", line.rank},
                      {"node", line.node},
                      {"attempt", line.attempt},
                      {"count", line.points.size()},
                      {"points", std::move(kept)}});
  }
  return {{"key", key}, {"points", total}, {"series", std::move(series)}};
}

json system_json(tracking::RunStore& store) {
  std::map<std::pair<std::string, int>, json> by_series;
  for (const auto& [node, wall, key, value] : store.node_system_metrics()) {
    by_series[{key, node}].push_back(json::array({wall, value}));
  }
  json series = json::array();
  for (auto& [id, points] : by_series) {
    series.push_back({{"key", id.first}, {"node", id.second}, {"points", std::move(points)}});
  }
  return {{"series", std::move(series)}};
}

json report_json(tracking::RunStore& store, const std::string& id, size_t max_points) {
  RunCache cache;
  auto counts = cache.metric_counts(id, store);
  json metrics = json::object();
  for (const auto& entry : counts) {
    const std::string& key = entry.first;  // Clang 14 cannot capture structured bindings
    cache.with_series(id, store, key, [&](const RunCache::Lines& lines) {
      metrics[key] = metric_json(key, lines, max_points);
    });
  }
  return {{"run", run_json(store, id, counts)},
          {"metrics", std::move(metrics)},
          {"system", system_json(store)}};
}

}  // namespace ddprun::dashboard
