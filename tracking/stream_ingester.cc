#include "tracking/stream_ingester.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

namespace ddprun::tracking {
namespace {

bool parse_name(const std::string& name, int& node, int& rank, int& attempt) {
  return std::sscanf(name.c_str(), "n%d.r%d.a%d.jsonl", &node, &rank, &attempt) == 3;
}

}  // namespace

std::string stream_path(const std::string& run_dir, int node, int rank, int attempt) {
  return run_dir + "/streams/n" + std::to_string(node) + ".r" + std::to_string(rank) + ".a" +
         std::to_string(attempt) + ".jsonl";
}

StreamIngester::StreamIngester(RunStore& store, std::string run_dir)
    : store_(store), run_dir_(std::move(run_dir)) {}

StreamIngester::Stats StreamIngester::drain(bool final) {
  Stats stats;
  std::error_code ec;
  std::filesystem::directory_iterator it(run_dir_ + "/streams", ec);
  if (ec) return stats;
  store_.begin();
  try {
    for (const auto& entry : it) {
      int node = 0;
      int rank = 0;
      int attempt = 0;
      std::string name = entry.path().filename();
      if (parse_name(name, node, rank, attempt)) {
        ingest_file(entry.path(), node, rank, attempt, final, stats);
      }
    }
    store_.commit();
  } catch (...) {
    // Disk full or another database error: undo the whole batch (the offsets too, so
    // nothing is skipped next time) and keep what was stored before intact.
    store_.rollback();
    throw;
  }
  totals_.points += stats.points;
  totals_.records += stats.records;
  totals_.bad_lines += stats.bad_lines;
  totals_.torn_records += stats.torn_records;
  return stats;
}

void StreamIngester::ingest_file(const std::string& path, int node, int rank, int attempt,
                                 bool final, Stats& stats) {
  std::string key = std::filesystem::path(path).filename();
  int64_t offset = store_.stream_offset(key);
  std::ifstream in(path, std::ios::binary);
  in.seekg(offset);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t end = data.rfind('\n');
  size_t complete = end == std::string::npos ? 0 : end + 1;
  std::vector<MetricPoint> points;
  size_t pos = 0;
  while (pos < complete) {
    size_t nl = data.find('\n', pos);
    std::string line = data.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.empty()) continue;
    try {
      auto rec = nlohmann::json::parse(line);
      std::string kind = rec.at("k").get<std::string>();
      const auto& d = rec.at("d");
      if (kind == "log") {
        MetricPoint base;
        base.node = node;
        base.rank = rank;
        base.attempt = attempt;
        base.seq = rec.at("seq").get<int64_t>();
        base.wall = rec.value("t", 0.0);
        if (rec.contains("step") && rec["step"].is_number_integer()) {
          base.step = rec["step"].get<int64_t>();
        }
        for (const auto& [k, v] : d.items()) {
          if (!v.is_number() && !v.is_boolean()) continue;  // numbers only
          MetricPoint p = base;
          p.key = k;
          p.value = v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : v.get<double>();
          points.push_back(p);
        }
      } else if (kind == "config" || kind == "summary") {
        for (const auto& [k, v] : d.items()) {
          if (kind == "config") store_.add_config(node, rank, attempt, k, v.dump());
          else store_.add_summary(node, rank, attempt, k, v.dump());
        }
      } else {
        ++stats.bad_lines;
        continue;
      }
      ++stats.records;
    } catch (const std::exception&) {
      ++stats.bad_lines;
    }
  }
  store_.add_metrics(points);
  stats.points += static_cast<int64_t>(points.size());
  size_t consumed = complete;
  if (final && complete < data.size()) {
    ++stats.torn_records;  // the writer died mid-record: skip it, keep the rest
    consumed = data.size();
  }
  if (consumed > 0) store_.set_stream_offset(key, offset + static_cast<int64_t>(consumed));
}

}  // namespace ddprun::tracking
