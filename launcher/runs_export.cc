#include "launcher/runs_export.h"

#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "tracking/run_summary.h"
#include "tracking/tfevents.h"

namespace ddprun::launcher {
namespace {

std::string json_text(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A CSV field: quoted where it holds a comma, a quote or a line end.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// Metric points, then what workers logged with config() and summary(): rows whose key
// is config/<key> or summary/<key>, the value as logged (JSON), no seq, wall or step.
void write_csv(tracking::RunStore& s, std::ostream& out) {
  out << "node,rank,attempt,seq,wall,step,key,value\n";
  s.for_each_metric([&out](const tracking::MetricPoint& p) {
    out << p.node << "," << p.rank << "," << p.attempt << "," << p.seq << ","
        << std::setprecision(17) << p.wall << "," << (p.step ? std::to_string(*p.step) : "") << ","
        << csv_field(p.key) << "," << p.value << "\n";
  });
  for (const auto& [kind, entries] : {std::pair{"config/", s.configs()}, {"summary/", s.summaries()}}) {
    for (const auto& e : entries) {
      out << e.node << "," << e.rank << "," << e.attempt << ",,,," << csv_field(kind + e.key)
          << "," << csv_field(e.value_json) << "\n";
    }
  }
}

// One JSON object a line: metric points, then config and summary entries ("kind":
// "config" or "summary", "value" as logged).
void write_jsonl(tracking::RunStore& s, std::ostream& out) {
  s.for_each_metric([&out](const tracking::MetricPoint& p) {
    out << "{\"node\":" << p.node << ",\"rank\":" << p.rank << ",\"attempt\":" << p.attempt
        << ",\"seq\":" << p.seq << ",\"wall\":" << std::setprecision(17) << p.wall
        << ",\"step\":" << (p.step ? std::to_string(*p.step) : "null")
        << ",\"key\":" << json_text(p.key) << ",\"value\":" << p.value << "}\n";
  });
  for (const auto& [kind, entries] : {std::pair{"config", s.configs()}, {"summary", s.summaries()}}) {
    for (const auto& e : entries) {
      out << "{\"node\":" << e.node << ",\"rank\":" << e.rank << ",\"attempt\":" << e.attempt
          << ",\"kind\":\"" << kind << "\",\"key\":" << json_text(e.key)
          << ",\"value\":" << e.value_json << "}\n";
    }
  }
}

// The run's goodput accounting: one row per category, for the job (attempt -1) and for
// each attempt, key goodput/<category>, value in seconds (goodput/ratio: a fraction).
void write_goodput_csv(const tracking::Goodput& g, std::ostream& out) {
  auto rows = [&out](int attempt, const tracking::TimeSplit& s) {
    for (const auto& [key, v] : {std::pair{"startup", s.startup},
                                 {"productive", s.productive},
                                 {"lost", s.lost},
                                 {"hang_wait", s.hang_wait},
                                 {"restart", s.restart},
                                 {"shutdown", s.shutdown},
                                 {"ratio", s.goodput()}}) {
      out << ",," << attempt << ",,,,goodput/" << key << "," << v << "\n";
    }
  };
  rows(-1, g.job);
  for (const auto& a : g.attempts) rows(a.attempt, a.split);
}

// csv and jsonl go to standard output, or to the file `output` names; tfevents files
// go under the directory `output` names (default <id>-tfevents).
}  // namespace

int export_run(tracking::RunStore& s, const std::string& id, const std::string& format,
               const std::string& output) {
  if (format == "tfevents") {
    std::string dir = output.empty() ? id + "-tfevents" : output;
    auto files = tracking::export_tfevents(s, dir);
    std::cout << "wrote " << files.size() << " TensorBoard event file(s) under " << dir
              << " (tensorboard --logdir " << dir << ")\n";
    return 0;
  }
  std::optional<tracking::Goodput> goodput;
  try {
    goodput = tracking::summarize_run(s, id).goodput;
  } catch (const std::exception&) {
    // A run whose summary cannot be made still exports its points.
  }
  auto write = [&format, &goodput](tracking::RunStore& store, std::ostream& out) {
    if (format == "csv") {
      write_csv(store, out);
      if (goodput && goodput->steps_seen) write_goodput_csv(*goodput, out);
    } else {
      write_jsonl(store, out);
      // One line: the job's accounting with each attempt's ("kind": "goodput").
      if (goodput && goodput->steps_seen) {
        out << "{\"kind\":\"goodput\",\"value\":" << tracking::goodput_json(*goodput) << "}\n";
      }
    }
  };
  if (output.empty()) {
    write(s, std::cout);
    return 0;
  }
  std::ofstream out(output);
  if (out) write(s, out);
  if (!out.flush()) {
    std::cerr << "ddprun runs: error: cannot write " << output << "\n";
    return 1;
  }
  std::cout << "wrote " << output << "\n";
  return 0;
}

}  // namespace ddprun::launcher
