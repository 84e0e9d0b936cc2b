#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "tracking/run_store.h"
#include "tracking/run_summary.h"

namespace ddprun::dashboard {

/// The JSON the dashboard's pages and its `/api` show, built from a run's database;
/// `runs report` embeds the same. Field names are documented in the README.

/// One run's line: id, name, status, created, finished, duration, nodes, ranks,
/// restarts, exit_code, root_cause (or id and error when unreadable).
nlohmann::json summary_json(const tracking::RunSummary& run);

/// A run: its summary, the launch command and config, the metric keys with their
/// point counts, config and summary entries per rank, every event (its data parsed).
nlohmann::json run_json(tracking::RunStore& store, const std::string& id);

/// One metric: {key, points, series: [{rank, node, attempt, count, points: [[x, value,
/// wall], ...]}]}, x the step when logged, else the record's sequence number. A series
/// longer than `max_points` keeps each bucket's first, lowest and highest points, so
/// spikes survive; 0 keeps every point. Returns null when the run has no such key.
nlohmann::json metric_json(tracking::RunStore& store, const std::string& key,
                           size_t max_points);

/// System metrics: {series: [{key, node, points: [[wall, value], ...]}]}; keys as
/// sampled ("rank3/cpu", "memory_percent", "gpu.0.gpu").
nlohmann::json system_json(tracking::RunStore& store);

/// The whole run for the offline report: run_json, every metric (downsampled to
/// `max_points` per series) and the system metrics.
nlohmann::json report_json(tracking::RunStore& store, const std::string& id, size_t max_points);

}  // namespace ddprun::dashboard
