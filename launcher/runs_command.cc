#include "launcher/runs_command.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/node_names.h"
#include "common/number_ranges.h"
#include "common/seconds_text.h"
#include "dashboard/http_server.h"
#include "dashboard/report_page.h"
#include "dashboard/routes.h"
#include "launcher/runs_export.h"
#include "launcher/runs_help.h"
#include "launcher/text_table.h"
#include "tracking/part_merge.h"
#include "tracking/run_reading.h"
#include "tracking/run_store.h"
#include "tracking/run_summary.h"
#include "tracking/run_tracker.h"

namespace ddprun::launcher {
namespace {

using tracking::RunStore;

// Of a stack in an event, `runs show` prints this many lines (the dashboard has all).
constexpr int kStackLines = 40;

std::string format_time(double epoch) {
  if (epoch <= 0) return "-";
  auto t = static_cast<std::time_t>(epoch);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

// A value as `runs show` prints it: up to 6 significant digits.
std::string number(double v) {
  std::ostringstream out;
  out << std::setprecision(6) << v;
  return out.str();
}

std::string seconds(double s) { return seconds_text(s); }

int list(const std::string& dir, int limit, const std::string& status) {
  std::vector<tracking::RunSummary> runs;
  try {
    runs = tracking::list_runs(dir);
  } catch (const tracking::TrackingError& e) {
    std::cerr << "ddprun runs: error: " << e.what() << "\n";
    return 1;
  }
  TextTable table({"RUN", "NAME", "STATUS", "STARTED", "DURATION", "NODES x RANKS", "RESTARTS",
                   "GOODPUT", "EXIT", "CAUSE"},
                  {false, false, false, false, true, true, true, true, true});
  int shown = 0;
  for (const auto& r : runs) {
    if (!status.empty() && r.status != status) continue;
    if (limit > 0 && shown == limit) break;
    ++shown;
    if (!r.error.empty()) {
      table.add({r.id, "-", "unreadable", "-", "-", "-", "-", "-", "-", r.error});
      continue;
    }
    std::string size = r.nodes > 0 ? std::to_string(r.nodes) + " x " + std::to_string(r.ranks) : "-";
    std::string goodput = "-";  // no step timed: unknown
    if (r.goodput && r.goodput->steps_seen) {
      char pct[16];
      std::snprintf(pct, sizeof(pct), "%.1f%%", r.goodput->job.goodput() * 100);
      goodput = pct;
    }
    table.add({r.id, r.name, r.status, format_time(r.created), seconds(tracking::run_duration(r)),
               size, std::to_string(r.restarts), goodput,
               r.exit_code ? std::to_string(*r.exit_code) : "-", r.root_cause});
  }
  table.print(std::cout);
  return 0;
}

// Where the job's seconds went, in all and per attempt.
void print_goodput(const tracking::Goodput& g) {
  std::cout << tracking::describe_goodput(g) << "\n";
  if (!g.steps_seen || g.attempts.size() < 2) return;
  for (const auto& a : g.attempts) {
    const auto& s = a.split;
    char line[200];
    std::snprintf(
        line, sizeof(line),
        "  attempt %d: %.1f s, goodput %.1f%%: start-up %.1f, productive %.1f, lost %.1f, "
        "hang wait %.1f, restart %.1f, shutdown %.1f",
        a.attempt, s.total(), s.goodput() * 100, s.startup, s.productive, s.lost, s.hang_wait,
        s.restart, s.shutdown);
    std::cout << line << "\n";
  }
}

// A hang event holds every rank's stacks: show who hung and where each rank was.
void print_hang(const std::string& data_json) {
  auto d = nlohmann::json::parse(data_json, nullptr, false);
  std::cout << "  " << (d.is_object() ? d.value("reason", "") : data_json) << "\n";
  if (!d.is_object()) return;
  std::istringstream summary(d.value("summary", ""));
  for (std::string line; std::getline(summary, line);) std::cout << "      " << line << "\n";
}

// A reaping by the worker watchdog: what expired, where the worker was, its stack.
void print_watchdog(const std::string& data_json) {
  auto d = nlohmann::json::parse(data_json, nullptr, false);
  if (!d.is_object()) {
    std::cout << "  " << data_json << "\n";
    return;
  }
  auto text = [&d](const char* key) {
    auto it = d.find(key);
    return it != d.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto num = [&d](const char* key) {
    auto it = d.find(key);
    return it != d.end() && it->is_number() ? it->get<double>() : 0.0;
  };
  std::cout << "  " << text("signal") << " to pid " << std::llround(num("pid")) << ": scope "
            << text("scope")
            << " expired after " << seconds(num("timer_seconds")) << "\n";
  if (!text("where").empty()) std::cout << "      in " << text("where") << "\n";
  std::string stack = text("python_stack").empty() ? text("native_stack") : text("python_stack");
  std::istringstream lines(stack);
  int shown = 0, total = 0;
  for (std::string line; std::getline(lines, line); ++total) {
    if (shown < kStackLines) {
      std::cout << "      " << line << "\n";
      ++shown;
    }
  }
  if (total > shown) std::cout << "      ... " << total - shown << " more line(s)\n";
}

// What workers logged with config() or summary(): each key and value once, with the
// ranks that logged it (most jobs log the same config on every rank).
void print_entries(const char* title, const std::vector<RunStore::Entry>& entries) {
  if (entries.empty()) return;
  std::map<std::pair<std::string, std::string>, std::set<int>> ranks;
  for (const auto& e : entries) ranks[{e.key, e.value_json}].insert(e.rank);
  std::cout << "\n" << title << ":\n";
  TextTable table({"KEY", "VALUE", "RANKS"}, {false, false, false});
  for (const auto& [entry, who] : ranks)
    table.add({entry.first, entry.second, number_ranges(std::vector<int>(who.begin(), who.end()))});
  table.print(std::cout, "  ");
}

int show(RunStore& s, const std::string& id) {
  tracking::RunSummary r = tracking::summarize_run(s, id);
  std::cout << "run:      " << id << " (" << r.name << ")\n"
            << "status:   " << r.status;
  if (r.exit_code) std::cout << " (exit code " << *r.exit_code << ")";
  std::cout << "\ncreated:  " << format_time(r.created) << "\n"
            << "duration: " << seconds(tracking::run_duration(r)) << "\n";
  if (r.nodes > 0) std::cout << "size:     " << r.nodes << " node(s), " << r.ranks << " rank(s)\n";
  // Each node by its host; its agent's pid where its host has several.
  std::vector<std::string> known = r.agents;
  known.insert(known.end(), r.spares.begin(), r.spares.end());
  if (!r.spares.empty()) {
    std::cout << "spares:   " << r.spares.size() << " waiting: " << node_names(r.spares, known)
              << "\n";
  }
  for (const auto& q : r.quarantined) {
    std::cout << "quarantined: " << node_name(q.node, known) << " until " << format_time(q.until)
              << " (" << q.reason << ")\n";
  }
  if (!r.membership.empty()) {
    std::cout << "membership:\n";
    for (const auto& line : r.membership) std::cout << "  " << line << "\n";
  }
  for (const auto& st : r.stragglers) {
    char figures[96];
    std::snprintf(figures, sizeof(figures), "%.1fx the job's median own work per step (%.3f s against %.3f s)",
                  st.score, st.own_s, st.median_s);
    std::cout << "straggler: " << st.who << ": " << figures << ", named " << st.times
              << (st.times == 1 ? " time" : " times") << ", first " << format_time(st.first)
              << ", last " << format_time(st.last) << "\n";
  }
  if (r.restarts > 0) std::cout << "restarts: " << r.restarts << "\n";
  if (r.membership_changes > 0) {
    std::cout << "membership changes: " << r.membership_changes
              << " (rounds re-formed as nodes came or went; not restarts)\n";
  }
  if (r.goodput) print_goodput(*r.goodput);
  if (!r.root_cause.empty()) std::cout << "cause:    " << r.root_cause << "\n";
  print_entries("config", s.configs());
  print_entries("summary", s.summaries());
  auto metrics = s.metric_summaries();
  if (!metrics.empty()) {
    std::cout << "\nmetrics (per rank):\n";
    TextTable table({"KEY", "RANK", "POINTS", "LAST", "MIN", "MAX"},
                    {false, true, true, true, true, true});
    for (const auto& m : metrics) {
      table.add({m.key, std::to_string(m.rank), std::to_string(m.count), number(m.last),
                 number(m.min), number(m.max)});
    }
    table.print(std::cout, "  ");
  }
  auto system = s.system_metric_summaries();
  if (!system.empty()) {
    std::cout << "\nsystem metrics:\n";
    TextTable table({"KEY", "SAMPLES", "LAST"}, {false, true, true});
    for (const auto& [key, n, last] : system) table.add({key, std::to_string(n), number(last)});
    table.print(std::cout, "  ");
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
    if (e.kind == "watchdog") {
      print_watchdog(e.data_json);
      continue;
    }
    std::cout << "  " << e.data_json << "\n";
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

// What a killed launcher left unfolded goes into run.db: the one reader that writes.
int repair(const std::string& run_dir) {
  auto r = tracking::recover_run(run_dir);
  std::cout << "repaired run " << r.run_id << ": folded " << r.stats.records << " record(s), "
            << r.stats.points << " point(s) into " << run_dir << "/run.db\n";
  return 0;
}

// The dashboard's port unless told: TensorBoard's 6006 plus one, free on most machines.
constexpr uint16_t kDashboardPort = 6007;

int serve(const std::string& dir, const std::string& host, uint16_t port) {
  if (!std::filesystem::is_directory(dir)) {
    std::cerr << "ddprun runs: error: no tracking directory " << dir
              << " (--tracking_dir names it)\n";
    return 1;
  }
  try {
    dashboard::Routes routes(dir);
    dashboard::HttpServer server(routes, host, port);
    std::string shown = host.find(':') != std::string::npos ? "[" + host + "]" : host;
    std::cout << "ddprun: serving the runs in " << dir << " at http://" << shown << ":"
              << server.port() << "/ (Ctrl-C stops)" << std::endl;
    server.run();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "ddprun runs: error: " << e.what() << "\n";
    return 1;
  }
}

// A count flag's value: a whole number >= 1.
int parse_count(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < 1 || v > 1'000'000) {
    throw UsageError(flag + "=" + text + ": expected a whole number from 1");
  }
  return static_cast<int>(v);
}

// `ddprun runs`'s command line, as given.
struct RunsArgs {
  std::string dir = "./ddprun-runs";
  bool dir_given = false;
  std::string format = "jsonl";
  std::string output;
  int limit = 0;
  std::string host = "127.0.0.1";
  uint16_t port = kDashboardPort;
  std::string status;
  bool format_given = false, port_given = false, host_given = false;
  std::vector<std::string> positional;  // the verb, then its RUN
};

uint16_t parse_port(const std::string& text) {
  char* end = nullptr;
  long p = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || p < 0 || p > 65535) {
    throw UsageError("--port=" + text + ": expected a port from 0 (any free one) to 65535");
  }
  return static_cast<uint16_t>(p);
}

// Takes `a` (and its value from `args`, at `i`) into `r`. Throws UsageError.
void take_flag(const std::vector<std::string>& args, size_t& i, RunsArgs& r) {
  const std::string& a = args[i];
  auto value = [&](const std::string& flag) -> std::string {
    if (a.rfind(flag + "=", 0) == 0) return a.substr(flag.size() + 1);
    if (i + 1 < args.size()) return args[++i];
    throw UsageError(flag + ": expected a value");
  };
  auto is = [&a](const std::string& flag) { return a == flag || a.rfind(flag + "=", 0) == 0; };
  if (is("--tracking_dir") || is("--tracking-dir")) {
    r.dir = value(a.rfind("--tracking-dir", 0) == 0 ? "--tracking-dir" : "--tracking_dir");
    r.dir_given = true;
  } else if (is("--format")) {
    r.format = value("--format");
    r.format_given = true;
  } else if (a == "-o" || is("--output")) {
    r.output = value(a == "-o" ? "-o" : "--output");
  } else if (is("--limit")) {
    r.limit = parse_count("--limit", value("--limit"));
  } else if (is("--status")) {
    r.status = value("--status");
    if (r.status != "running" && r.status != "finished" && r.status != "failed" &&
        r.status != "killed" && r.status != "crashed") {
      throw UsageError("--status=" + r.status +
                       ": expected running, finished, failed, killed or crashed");
    }
  } else if (is("--port")) {
    r.port = parse_port(value("--port"));
    r.port_given = true;
  } else if (is("--host")) {
    r.host = value("--host");
    r.host_given = true;
  } else if (a.rfind("--", 0) == 0) {
    throw UsageError(a + ": unrecognized flag");
  } else {
    r.positional.push_back(a);
  }
}

// A flag given to a verb that does not take it is an error, not silently ignored: the
// message, or "" where every flag applies.
std::string flag_misplaced(const RunsArgs& r) {
  const std::string& verb = r.positional[0];
  struct Applies {
    const char* flag;
    bool given;
    std::vector<std::string> verbs;
  };
  for (const Applies& a :
       {Applies{"-o/--output", !r.output.empty(), {"export", "report"}},
        Applies{"--format", r.format_given, {"export"}}, Applies{"--limit", r.limit > 0, {"list"}},
        Applies{"--status", !r.status.empty(), {"list"}},
        Applies{"--port", r.port_given, {"serve"}}, Applies{"--host", r.host_given, {"serve"}}}) {
    if (a.given && std::find(a.verbs.begin(), a.verbs.end(), verb) == a.verbs.end()) {
      return std::string(a.flag) + " does not apply to '" + verb +
             "' (it is for: " + a.verbs.front() +
             (a.verbs.size() > 1 ? " and " + a.verbs.back() : "") + ")";
    }
  }
  return "";
}

// A verb of one run (show, export, report, repair) on the run `r.positional[1]`.
int on_one_run(const RunsArgs& r) {
  const std::string& verb = r.positional[0];
  std::string id = tracking::find_run(r.dir, r.positional[1]);
  std::string run_dir = r.dir + "/" + id;
  if (verb == "repair") return repair(run_dir);
  if (!std::filesystem::exists(run_dir + "/run.db")) {
    std::cerr << "ddprun runs: error: run '" << id << "' crashed as it started: its launcher "
              << "died before it wrote run.db; `ddprun runs repair " << id
              << "` makes the run from what it left\n";
    return 1;
  }
  if (tracking::needs_repair(run_dir)) {
    std::cerr << "ddprun runs: note: run '" << id << "' lacks records its killed launcher "
              << "left; `ddprun runs repair " << id << "` folds them in\n";
  }
  RunStore store(run_dir, RunStore::Open::kReadOnly);
  if (verb == "report") {
    std::ofstream out(r.output);
    out << dashboard::report_page(store, id);
    if (!out) {
      std::cerr << "ddprun runs: error: cannot write " << r.output << "\n";
      return 1;
    }
    std::cout << "wrote " << r.output << "\n";
    return 0;
  }
  return verb == "show" ? show(store, id) : export_run(store, id, r.format, r.output);
}

}  // namespace

int runs_command(int argc, const char* const argv[]) {
  std::vector<std::string> args(argv + 2, argv + argc);
  RunsArgs r;
  // As the launcher's --tracking_dir, PET_TRACKING_DIR names the directory too.
  const char* pet_dir = std::getenv("PET_TRACKING_DIR");
  if (pet_dir && *pet_dir) {
    r.dir = pet_dir;
    r.dir_given = true;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h" || (a == "help" && r.positional.empty())) {
      // `runs VERB --help` and `runs help VERB`: the verb's own help.
      const std::string* verb = !r.positional.empty()                ? &r.positional[0]
                                : a == "help" && i + 1 < args.size() ? &args[i + 1]
                                                                     : nullptr;
      const char* text = verb ? verb_help(*verb) : nullptr;
      std::cout << (text ? text : runs_usage());
      return 0;
    }
    try {
      take_flag(args, i, r);
    } catch (const UsageError& e) {
      std::cerr << "ddprun runs: error: " << e.what() << "\n";
      return 2;
    }
  }
  if (r.positional.empty()) {
    std::cerr << runs_usage();
    return 2;
  }
  const std::string& verb = r.positional[0];
  if (std::string misplaced = flag_misplaced(r); !misplaced.empty()) {
    std::cerr << "ddprun runs: error: " << misplaced << "\n";
    return 2;
  }
  size_t given = r.positional.size();
  if (verb == "list" && given == 1) return list(r.dir, r.limit, r.status);
  if (verb == "serve" && given == 1) return serve(r.dir, r.host, r.port);
  if (verb == "merge" && given == 2) {
    return merge(r.positional[1], r.dir_given ? std::optional<std::string>(r.dir) : std::nullopt);
  }
  if (!verb_help(verb)) {
    std::cerr << "ddprun runs: error: '" << verb << "' is not a verb of runs\n\n" << runs_usage();
    return 2;
  }
  if (verb == "list" || verb == "serve" || verb == "merge" || given != 2 ||
      (verb == "report" && r.output.empty())) {
    std::cerr << "ddprun runs " << verb << ": error: "
              << (verb == "list" || verb == "serve" ? "it takes no RUN"
                  : given < 2                       ? "which run? (a RUN is missing)"
                  : given > 2                       ? "one RUN only"
                                                    : "-o FILE.html is missing")
              << "\n\n"
              << verb_help(verb);
    return 2;
  }
  if (r.format != "csv" && r.format != "jsonl" && r.format != "tfevents") {
    std::cerr << "ddprun runs: error: --format=" << r.format
              << ": expected csv, jsonl or tfevents\n";
    return 2;
  }
  try {
    return on_one_run(r);
  } catch (const std::exception& e) {
    std::cerr << "ddprun runs: error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace ddprun::launcher
