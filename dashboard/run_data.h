#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "dashboard/run_cache.h"
#include "tracking/run_store.h"
#include "tracking/run_summary.h"

namespace ddprun::dashboard {

/// The JSON the dashboard's pages and its `/api` show, built from a run's database;
/// `runs report` embeds the same. Field names are documented in the README.

/// One run's line: id, name, status, created, finished, duration, nodes, ranks,
/// restarts, exit_code, root_cause (or id and error when unreadable).
nlohmann::json summary_json(const tracking::RunSummary& run);

/// A run: its summary, the launch command and config, the metric keys with their
/// point counts (`counts`), config and summary entries per rank, every event (its data
/// parsed).
nlohmann::json run_json(tracking::RunStore& store, const std::string& id,
                        const std::map<std::string, int64_t>& counts);

/// One metric: {key, points, series: [{rank, node, attempt, count, points: [[x, value,
/// wall], ...]}]}. A line longer than `max_points` keeps each bucket's first, lowest
/// and highest points, so spikes survive; 0 keeps every point. Null without lines.
nlohmann::json metric_json(const std::string& key, const RunCache::Lines& lines,
                           size_t max_points);

/// System metrics: {series: [{key, node, points: [[wall, value], ...]}]}; keys as
/// sampled ("rank3/cpu", "memory_percent", "gpu.0.gpu").
nlohmann::json system_json(tracking::RunStore& store);

/// The whole run for the offline report: run_json, every metric (downsampled to
/// `max_points` per series) and the system metrics.
nlohmann::json report_json(tracking::RunStore& store, const std::string& id, size_t max_points);

}  // namespace ddprun::dashboard
