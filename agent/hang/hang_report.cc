#include "agent/hang/hang_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "agent/hang/stack_text.h"
#include "common/number_ranges.h"
#include "common/seconds_text.h"

namespace ddprun::agent {
namespace {

using nlohmann::json;

// The `where` of a rank that had exited when the stacks were captured.
const char* const kExited = "(exited)";

// Culprits the summary describes one by one; the others it lists by where they stopped.
constexpr size_t kDetailedCulprits = 8;

std::string base_name(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool library_file(const std::string& file) {
  return file.empty() || file.find("/site-packages/") != std::string::npos ||
         file.find("/dist-packages/") != std::string::npos ||
         file.find("/lib/python3") != std::string::npos || file.rfind("<frozen", 0) == 0;
}

std::string frame_text(const Frame& f, bool with_code) {
  std::string s = f.function + " (" + base_name(f.file) + ":" + std::to_string(f.line);
  if (with_code && !f.code.empty()) s += ": " + f.code;
  return s + ")";
}

bool collective_frame(const Frame& f) {
  static const std::set<std::string> kCollectives = {"all_reduce",
                                                     "all_gather",
                                                     "all_gather_into_tensor",
                                                     "reduce_scatter",
                                                     "reduce_scatter_tensor",
                                                     "broadcast",
                                                     "barrier",
                                                     "monitored_barrier",
                                                     "all_to_all",
                                                     "all_to_all_single",
                                                     "reduce",
                                                     "gather",
                                                     "scatter",
                                                     "send",
                                                     "recv"};
  if (f.file.find("torch/distributed/") != std::string::npos) return true;
  if (f.file.find("torch/autograd/") != std::string::npos) return true;  // DDP's all-reduce
  if (!f.file.empty()) return kCollectives.count(f.function) > 0 && library_file(f.file);
  // Native frames: the communication libraries' own symbols.
  for (const char* lib : {"nccl", "gloo", "c10d", "ProcessGroup"}) {
    if (f.function.find(lib) != std::string::npos) return true;
  }
  return false;
}

std::string python_where(const ThreadStack& t) {
  const Frame& top = t.frames.front();
  if (!library_file(top.file)) return frame_text(top, true);
  for (const Frame& f : t.frames) {
    if (!library_file(f.file))
      return frame_text(top, false) + ", called from " + frame_text(f, true);
  }
  return frame_text(top, true);
}

std::string native_where(const ThreadStack& t) {
  std::string s;
  int shown = 0;
  for (const Frame& f : t.frames) {
    if (f.function.empty()) continue;
    s += (s.empty() ? "" : " <- ") + f.function;
    if (++shown == 3) break;
  }
  return s;
}

std::string details(const RankReport& r) {
  std::string s = r.step ? "last step " + std::to_string(*r.step) : "no step logged";
  s += ", " + seconds_text(r.idle_s) + " without progress";
  if (r.cpu_percent >= 0) s += ", " + std::to_string(std::lround(r.cpu_percent)) + "% CPU";
  if (r.state == 'D') {
    s += ", in uninterruptible sleep (D" + (r.wait_channel.empty() ? "" : ": " + r.wait_channel) +
         ")";
  } else if (r.state == 'T' || r.state == 't') {
    s += ", stopped (" + std::string(1, r.state) +
         (r.wait_channel.empty() ? "" : ": " + r.wait_channel) + ")";
  } else if (r.state != '?') {
    s += ", state " + std::string(1, r.state);
  }
  if (!r.section.empty()) s += ", in section '" + r.section + "'";
  return s;
}

// "ranks 0-7 are in f (...)\n", "culprit rank 9 had exited\n".
std::string ranks_where(const std::string& what, const std::vector<int>& members,
                        const std::string& where) {
  bool one = members.size() == 1;
  std::string s =
      what + (what.empty() ? "" : " ") + (one ? "rank " : "ranks ") + number_ranges(members);
  if (where == kExited) return s + (one ? " had " : " had all ") + "exited\n";
  return s + (one ? " is in " : " are in ") + where + "\n";
}

std::string place(const RankReport& r) {
  return "rank " + std::to_string(r.rank) + " (local_rank " + std::to_string(r.local_rank) +
         ") on node " + std::to_string(r.node) + " (" + r.host + ")";
}

// Ranks matching `pred`, when some but not all do.
template <typename Pred>
std::vector<int> some_not_all(const std::vector<RankReport>& ranks, Pred pred) {
  std::vector<int> out;
  for (const auto& r : ranks)
    if (pred(r)) out.push_back(r.rank);
  if (out.size() == ranks.size()) out.clear();
  return out;
}

std::vector<int> smaller_group(const std::vector<RankReport>& ranks) {
  std::map<std::string, std::vector<int>> groups;
  for (const auto& r : ranks) groups[r.function].push_back(r.rank);
  if (groups.size() < 2) return {};
  std::vector<std::vector<int>> sized;
  for (auto& [fn, members] : groups) sized.push_back(members);
  std::sort(sized.begin(), sized.end(),
            [](const auto& a, const auto& b) { return a.size() < b.size(); });
  if (sized[0].size() == sized[1].size()) return {};
  return sized[0];
}

}  // namespace

json to_json(const RankReport& r) {
  json j = {{"rank", r.rank},
            {"local_rank", r.local_rank},
            {"node", r.node},
            {"host", r.host},
            {"pid", r.pid},
            {"idle_s", r.idle_s},
            {"section", r.section},
            {"state", std::string(1, r.state)},
            {"wait_channel", r.wait_channel},
            {"cpu_percent", r.cpu_percent},
            {"python_stack", r.python_stack},
            {"native_stack", r.native_stack},
            {"stack_note", r.stack_note},
            {"where", r.where},
            {"function", r.function},
            {"in_collective", r.in_collective},
            {"nccl", to_json(r.nccl)},
            {"nccl_dump", r.nccl_dump}};
  j["step"] = r.step ? json(*r.step) : json(nullptr);
  return j;
}

RankReport rank_report_from_json(const json& j) {
  RankReport r;
  auto get = [&j](const char* key, auto& out) {
    auto it = j.find(key);
    if (it == j.end()) return;
    try {
      it->get_to(out);
    } catch (const json::exception&) {
    }
  };
  get("rank", r.rank);
  get("local_rank", r.local_rank);
  get("node", r.node);
  get("host", r.host);
  get("pid", r.pid);
  get("idle_s", r.idle_s);
  get("section", r.section);
  std::string state;
  get("state", state);
  if (!state.empty()) r.state = state[0];
  get("wait_channel", r.wait_channel);
  get("cpu_percent", r.cpu_percent);
  get("python_stack", r.python_stack);
  get("native_stack", r.native_stack);
  get("stack_note", r.stack_note);
  get("where", r.where);
  get("function", r.function);
  get("in_collective", r.in_collective);
  get("nccl_dump", r.nccl_dump);
  if (j.contains("nccl")) r.nccl = flight_record_from_json(j["nccl"]);
  int64_t step = 0;
  if (j.contains("step") && j["step"].is_number_integer()) {
    get("step", step);
    r.step = step;
  }
  return r;
}

void describe_stacks(RankReport& r) {
  if (r.state == 'X') {
    r.where = kExited;
    return;
  }
  auto python = parse_python_stacks(r.python_stack);
  add_source_lines(python);
  const ThreadStack* t = main_thread(python);
  bool is_python = t != nullptr && !t->frames.empty();
  auto native = parse_native_stacks(r.native_stack);
  if (!is_python) t = main_thread(native);
  if (t == nullptr || t->frames.empty()) {
    r.where = "unknown (" + (r.stack_note.empty() ? "no stack" : r.stack_note) + ")";
    return;
  }
  r.function = t->frames.front().function;
  r.where = is_python ? python_where(*t) : native_where(*t);
  r.in_collective = std::any_of(t->frames.begin(), t->frames.end(), collective_frame);
}

namespace {

// `text` cut at a line's end within `bytes`, saying so.
std::string cut(const std::string& text, size_t bytes, const std::string& full_at) {
  if (text.size() <= bytes) return text;
  size_t end = text.rfind('\n', bytes);
  end = end == std::string::npos ? bytes : end + 1;
  return text.substr(0, end) + "... (" + std::to_string(text.size() - end) +
         " bytes more; cut to share, all of it is in " + full_at + ")\n";
}

}  // namespace

size_t shared_stack_bytes(int nodes) {
  constexpr size_t kNode = 256 << 10, kJob = 64 << 20, kLeast = 4 << 10;
  return std::clamp(kJob / static_cast<size_t>(std::max(nodes, 1)), kLeast, kNode);
}

std::string part_to_share(const std::string& part, size_t node_bytes, const std::string& full_at) {
  json ranks = json::parse(part, nullptr, false);
  if (!ranks.is_array() || ranks.empty()) return part;
  cut_stacks(ranks, node_bytes, full_at);
  return ranks.dump();
}

void cut_stacks(json& ranks, size_t bytes, const std::string& full_at) {
  if (!ranks.is_array() || ranks.empty()) return;
  size_t each = bytes / ranks.size();
  for (auto& j : ranks) {
    if (!j.is_object()) continue;
    std::string py = j.value("python_stack", ""), native = j.value("native_stack", "");
    if (py.size() + native.size() <= each) continue;
    // Halves, where one stack needs less the other may have the rest.
    size_t py_bytes = std::max(each / 2, each - std::min(native.size(), each / 2));
    j["python_stack"] = cut(py, py_bytes, full_at);
    j["native_stack"] = cut(native, each - std::min(py.size(), py_bytes), full_at);
  }
}

namespace {

// Ranks at (almost) no CPU while every other rank keeps a core busy: where stacks do
// not tell a collective apart, the CPU does (NCCL's waits spin; a rank asleep in its
// data loader or on a lock does not). Every rank's use must be known.
std::vector<int> idle_among_busy(const std::vector<RankReport>& ranks) {
  constexpr double kIdle = 5, kBusy = 50;  // percent of one core
  bool known = std::all_of(ranks.begin(), ranks.end(),
                           [](const RankReport& r) { return r.cpu_percent >= 0; });
  bool rest_busy = std::all_of(ranks.begin(), ranks.end(), [](const RankReport& r) {
    return r.cpu_percent < kIdle || r.cpu_percent > kBusy;
  });
  if (!known || !rest_busy) return {};
  return some_not_all(ranks, [](const RankReport& r) { return r.cpu_percent < kIdle; });
}

// What the flight recorders tell, when the job has them. Culprits only when every
// rank's record came: a rank whose dump is missing may be the one behind.
CollectiveVerdict collectives(const std::vector<RankReport>& ranks) {
  std::map<int, FlightRecord> records;
  for (const auto& r : ranks)
    if (!r.nccl.groups.empty()) records[r.rank] = r.nccl;
  if (records.empty()) return {};
  CollectiveVerdict v = judge_collectives(records);
  if (records.size() != ranks.size()) {
    v.culprits.clear();
    v.why.clear();
  }
  return v;
}

std::string collective_line(const CollectiveVerdict& v) {
  std::string s = "  NCCL flight recorder";
  if (!v.group.empty()) s += ", process group " + v.group;
  s += ":";
  const char* sep = " ";
  for (const auto& [where, members] : v.places) {
    s += sep + std::string(members.size() == 1 ? "rank " : "ranks ") + number_ranges(members) +
         " at " + where;
    sep = "; ";
  }
  return s + "\n";
}

}  // namespace

HangDiagnosis diagnose(const std::vector<RankReport>& ranks) {
  HangDiagnosis d;
  CollectiveVerdict nccl = collectives(ranks);
  if ((d.culprits = some_not_all(ranks, [](const RankReport& r) {
         return r.state == 'D';
       })).size()) {
    d.why = "in uninterruptible sleep while the others are not";
  } else if ((d.culprits = some_not_all(ranks, [](const RankReport& r) {
                return r.state == 'T' || r.state == 't';
              })).size()) {
    d.why = "stopped (SIGSTOP, a debugger, a frozen cgroup) while the others are not";
  } else if ((d.culprits = nccl.culprits).size()) {
    d.why = nccl.why;
  } else if ((d.culprits = some_not_all(ranks, [](const RankReport& r) {
                return !r.in_collective;
              })).size()) {
    d.why = "not in a collective while the others wait in one";
  } else if ((d.culprits = idle_among_busy(ranks)).size()) {
    d.why = "idle while the others spin (a collective that waits busily, as NCCL's does)";
  } else if ((d.culprits = smaller_group(ranks)).size()) {
    d.why = "stopped somewhere else than the others";
  } else {
    std::optional<int64_t> low;
    for (const auto& r : ranks)
      if (r.step && (!low || *r.step < *low)) low = r.step;
    d.culprits = some_not_all(ranks, [&low](const RankReport& r) { return low && r.step == low; });
    if (!d.culprits.empty()) {
      d.why = "the lowest step";
    } else {
      double longest = 0;
      for (const auto& r : ranks) longest = std::max(longest, r.idle_s);
      d.culprits =
          some_not_all(ranks, [longest](const RankReport& r) { return r.idle_s > longest - 1; });
      if (!d.culprits.empty()) d.why = "the longest without progress";
    }
  }
  std::ostringstream out;
  std::set<int> culprits(d.culprits.begin(), d.culprits.end());
  for (const auto& r : ranks) {
    if (!culprits.count(r.rank)) continue;
    d.headline = place(r) + " stopped in " + r.where;
    if (!nccl.culprits.empty() && d.why == nccl.why) d.headline += " (" + nccl.note + ")";
    if (culprits.size() > 1)
      d.headline += " (and " + std::to_string(culprits.size() - 1) + " more)";
    break;
  }
  // The first culprits in detail; the rest, and the other ranks, by where they stopped
  // (a whole job's ranks in a few lines).
  std::map<std::string, std::vector<int>> more_culprits, others;
  size_t detailed = 0;
  for (const auto& r : ranks) {
    if (!culprits.count(r.rank)) {
      others[r.where].push_back(r.rank);
    } else if (detailed++ < kDetailedCulprits) {
      out << "  culprit: " << place(r) << " is in " << r.where << "\n           " << details(r)
          << "\n";
    } else {
      more_culprits[r.where].push_back(r.rank);
    }
  }
  if (culprits.empty()) out << "  no rank stands out: every rank stopped alike\n";
  for (const auto& [where, members] : more_culprits)
    out << "  " << ranks_where("culprit", members, where);
  for (const auto& [where, members] : others) out << "  " << ranks_where("", members, where);
  if (!nccl.places.empty()) out << collective_line(nccl);
  d.summary = out.str();
  return d;
}

std::string format_hang_report(const std::string& trigger, const std::vector<RankReport>& ranks,
                               const HangDiagnosis& diagnosis) {
  std::ostringstream out;
  out << trigger << "\n" << diagnosis.summary;
  if (!diagnosis.why.empty()) out << "  (culprit: " << diagnosis.why << ")\n";
  for (const auto& r : ranks) {
    out << "\n=== " << place(r) << ", pid " << r.pid << ": " << details(r) << "\n";
    if (!r.stack_note.empty()) out << "(" << r.stack_note << ")\n";
    if (!r.nccl.groups.empty()) out << "--- NCCL flight recorder (" << r.nccl_dump << ")\n";
    for (const auto& g : r.nccl.groups) {
      out << "process group " << g.group << ": entered " << describe_collective(g)
          << (g.sizes.empty() ? "" : ", input sizes " + g.sizes) << "; completed up to #"
          << g.completed << "\n";
    }
    if (!r.python_stack.empty()) out << "--- Python stacks\n" << r.python_stack;
    if (!r.native_stack.empty()) out << "--- native stacks\n" << r.native_stack;
  }
  return out.str();
}

}  // namespace ddprun::agent
