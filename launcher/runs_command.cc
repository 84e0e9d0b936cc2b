#include "launcher/runs_command.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "tracking/html_report.h"
#include "tracking/part_merge.h"
#include "tracking/run_store.h"
#include "tracking/run_tracker.h"

namespace ddprun::launcher {
namespace {

using tracking::RunStore;

std::string format_time(const std::string& epoch) {
  if (epoch.empty()) return "-";
  std::time_t t = static_cast<std::time_t>(std::stod(epoch));
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string duration(RunStore& s) {
  auto a = s.meta("created");
  auto b = s.meta("finished");
  if (!a) return "-";
  double end =
      b ? std::stod(*b)
        : std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
              .count();
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << end - std::stod(*a) << " s";
  return out.str();
}

int list(const std::string& dir) {
  std::error_code ec;
  std::vector<std::filesystem::path> runs;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (std::filesystem::exists(e.path() / "run.db")) runs.push_back(e.path());
  }
  if (ec) {
    std::cerr << "ddprun: error: cannot read the tracking directory " << dir << "\n";
    return 1;
  }
  std::sort(runs.begin(), runs.end());
  std::cout << std::left << std::setw(40) << "RUN" << std::setw(10) << "STATUS" << std::setw(21)
            << "CREATED"
            << "DURATION\n";
  for (const auto& r : runs) {
    try {
      RunStore s(r.string(), false);
      std::cout << std::setw(40) << r.filename().string() << std::setw(10)
                << tracking::effective_status(s) << std::setw(21)
                << format_time(s.meta("created").value_or("")) << duration(s) << "\n";
    } catch (const std::exception& e) {
      std::cout << std::setw(40) << r.filename().string() << "unreadable: " << e.what() << "\n";
    }
  }
  return 0;
}

// A hang event holds every rank's stacks: show who hung and where each rank was.
void print_hang(const std::string& data_json) {
  auto d = nlohmann::json::parse(data_json, nullptr, false);
  std::cout << "  " << (d.is_object() ? d.value("reason", "") : data_json) << "\n";
  if (!d.is_object()) return;
  std::istringstream summary(d.value("summary", ""));
  for (std::string line; std::getline(summary, line);) std::cout << "      " << line << "\n";
}

int show(RunStore& s, const std::string& id) {
  std::cout << "run:      " << id << " (" << s.meta("name").value_or(id) << ")\n"
            << "status:   " << tracking::effective_status(s);
  if (auto code = s.meta("exit_code")) std::cout << " (exit code " << *code << ")";
  std::cout << "\ncreated:  " << format_time(s.meta("created").value_or("")) << "\n"
            << "duration: " << duration(s) << "\n";
  if (auto rc = s.meta("root_cause"); rc && !rc->empty()) std::cout << "cause:    " << *rc << "\n";
  std::cout << "\nmetrics (per rank): key, rank, points, last, min, max\n";
  for (const auto& m : s.metric_summaries()) {
    std::cout << "  " << m.key << "  rank " << m.rank << "  " << m.count << "  " << m.last << "  "
              << m.min << "  " << m.max << "\n";
  }
  auto system = s.system_metric_summaries();
  if (!system.empty()) {
    std::cout << "\nsystem metrics: key, samples, last\n";
    for (const auto& [key, n, last] : system) {
      std::cout << "  " << key << "  " << n << "  " << last << "\n";
    }
  }
  std::cout << "\nevents:\n";
  double start = 0;
  for (const auto& e : s.events()) {
    if (start == 0) start = e.wall;
    std::cout << "  +" << std::fixed << std::setprecision(3) << e.wall - start << "s  " << e.kind;
    if (e.attempt >= 0) std::cout << " attempt " << e.attempt;
    if (e.rank >= 0) std::cout << " rank " << e.rank;
    if (e.kind == "hang") {
      print_hang(e.data_json);
      continue;
    }
    std::cout << "  " << e.data_json << "\n";
  }
  return 0;
}

int export_run(RunStore& s, const std::string& format) {
  if (format == "csv") {
    std::cout << "node,rank,attempt,seq,wall,step,key,value\n";
    for (const auto& p : s.metrics()) {
      std::cout << p.node << "," << p.rank << "," << p.attempt << "," << p.seq << ","
                << std::setprecision(17) << p.wall << "," << (p.step ? std::to_string(*p.step) : "")
                << "," << p.key << "," << p.value << "\n";
    }
    return 0;
  }
  for (const auto& p : s.metrics()) {
    std::cout << "{\"node\":" << p.node << ",\"rank\":" << p.rank << ",\"attempt\":" << p.attempt
              << ",\"seq\":" << p.seq << ",\"wall\":" << std::setprecision(17) << p.wall
              << ",\"step\":" << (p.step ? std::to_string(*p.step) : "null") << ",\"key\":\""
              << p.key << "\",\"value\":" << p.value << "}\n";
  }
  return 0;
}

int merge(const std::string& part_dir, const std::optional<std::string>& dir) {
  try {
    bool whole_run = std::filesystem::exists(part_dir + "/run.db");
    auto r = whole_run ? tracking::recover_run(part_dir) : tracking::merge_part(part_dir, dir);
    std::cout << "merged " << r.stats.records << " record(s), " << r.stats.points
              << " point(s) from " << part_dir << " into run " << r.run_id << " (" << r.run_dir
              << ")";
    if (r.stats.torn_records + r.stats.bad_lines > 0) {
      std::cout << "; skipped " << r.stats.torn_records << " torn and " << r.stats.bad_lines
                << " malformed record(s)";
    }
    std::cout << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "ddprun runs: error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace

int runs_command(int argc, const char* const argv[]) {
  std::vector<std::string> args(argv + 2, argv + argc);
  std::string dir = "./ddprun-runs";
  bool dir_given = false;
  std::string format = "jsonl";
  std::string output;
  std::vector<std::string> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    auto value = [&](const std::string& flag) -> std::string {
      if (a.rfind(flag + "=", 0) == 0) return a.substr(flag.size() + 1);
      if (i + 1 < args.size()) return args[++i];
      throw UsageError(flag + ": expected a value");
    };
    try {
      if (a == "--tracking_dir" || a == "--tracking-dir" || a.rfind("--tracking_dir=", 0) == 0 ||
          a.rfind("--tracking-dir=", 0) == 0) {
        dir = value(a.rfind("--tracking-dir", 0) == 0 ? "--tracking-dir" : "--tracking_dir");
        dir_given = true;
      } else if (a == "--format" || a.rfind("--format=", 0) == 0) {
        format = value("--format");
      } else if (a == "-o" || a == "--output" || a.rfind("--output=", 0) == 0) {
        output = value(a == "-o" ? "-o" : "--output");
      } else if (a.rfind("--", 0) == 0) {
        throw UsageError(a + ": unrecognized flag");
      } else {
        positional.push_back(a);
      }
    } catch (const UsageError& e) {
      std::cerr << "ddprun runs: error: " << e.what() << "\n";
      return 2;
    }
  }
  const char* usage =
      "usage: ddprun runs list | show RUN | export RUN [--format csv|jsonl] | "
      "report RUN -o FILE.html | merge PART_DIR|RUN_DIR  [--tracking_dir DIR]";
  if (positional.empty()) {
    std::cerr << usage << "\n";
    return 2;
  }
  const std::string& verb = positional[0];
  if (verb == "list" && positional.size() == 1) return list(dir);
  if (verb == "merge" && positional.size() == 2) {
    return merge(positional[1], dir_given ? std::optional<std::string>(dir) : std::nullopt);
  }
  if ((verb != "show" && verb != "export" && verb != "report") || positional.size() != 2 ||
      (verb == "report" && output.empty())) {
    std::cerr << usage << "\n";
    return 2;
  }
  if (format != "csv" && format != "jsonl") {
    std::cerr << "ddprun runs: error: --format=" << format << ": expected csv or jsonl\n";
    return 2;
  }
  const std::string& id = positional[1];
  std::string run_dir = dir + "/" + id;
  if (!std::filesystem::exists(run_dir + "/run.db")) {
    std::cerr << "ddprun runs: error: no run '" << id << "' in " << dir << "\n";
    return 1;
  }
  try {
    RunStore store(run_dir, false);
    if (verb == "report") {
      std::ofstream out(output);
      out << tracking::html_report(store, id);
      if (!out) {
        std::cerr << "ddprun runs: error: cannot write " << output << "\n";
        return 1;
      }
      std::cout << "wrote " << output << "\n";
      return 0;
    }
    return verb == "show" ? show(store, id) : export_run(store, format);
  } catch (const std::exception& e) {
    std::cerr << "ddprun runs: error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace ddprun::launcher
