#include "agent/hang/flight_recorder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "agent/hang/pickle_reader.h"

namespace ddprun::agent {
namespace {

using nlohmann::json;

// PyTorch's variables, under the name torch 2.3 reads and the newer alias (2.7) where
// there is one; a user's value under either is theirs.
constexpr const char* kBufferSize[] = {"TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_FR_BUFFER_SIZE"};
constexpr const char* kDumpFile[] = {"TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "TORCH_FR_DUMP_TEMP_FILE"};
constexpr const char* kPipeFile = "TORCH_NCCL_DEBUG_INFO_PIPE_FILE";
constexpr const char* kDumpOnTimeout = "TORCH_NCCL_DUMP_ON_TIMEOUT";
// Entries kept per worker when ddprun turns the recorder on: PyTorch's usual advice.
constexpr const char* kDefaultEntries = "2000";

template <size_t N>
std::string first_set(const char* const (&names)[N], const InheritedVar& inherited) {
  for (const char* name : names) {
    std::string v = inherited(name);
    if (!v.empty()) return v;
  }
  return "";
}

// Dump text goes into reports and the run: printable ASCII, of a bounded length.
std::string printable(std::string s) {
  constexpr size_t kMax = 200;
  if (s.size() > kMax) s = s.substr(0, kMax) + "...";
  for (char& c : s)
    if (c < 0x20 || c > 0x7e) c = '?';
  return s;
}

std::string group_name(const json& entry) {
  auto pg = entry.find("process_group");
  if (pg != entry.end()) {
    if (pg->is_array() && !pg->empty() && (*pg)[0].is_string()) return (*pg)[0].get<std::string>();
    if (pg->is_string()) return pg->get<std::string>();
  }
  auto id = entry.find("pg_id");
  return id != entry.end() && id->is_number_integer() ? std::to_string(id->get<int64_t>()) : "?";
}

bool point_to_point(const json& entry, const std::string& op) {
  auto p2p = entry.find("is_p2p");
  if (p2p != entry.end() && p2p->is_boolean()) return p2p->get<bool>();
  return op.find("send") != std::string::npos || op.find("recv") != std::string::npos;
}

template <typename T>
T field(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end()) return fallback;
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    return fallback;
  }
}

FlightRecord summarize(const json& dump) {
  FlightRecord r;
  r.version = printable(field<std::string>(dump, "version", ""));
  std::map<std::string, NcclGroupState> groups;
  for (const json& e : dump.at("entries")) {
    if (!e.is_object()) continue;
    std::string op = field<std::string>(e, "profiling_name", "");
    int64_t seq = field<int64_t>(e, "collective_seq_id", -1);
    if (seq < 0 || point_to_point(e, op)) continue;
    std::string name = printable(group_name(e));
    NcclGroupState& g = groups[name];
    g.group = name;
    std::string state = field<std::string>(e, "state", "");
    if (state == "completed" && seq > g.completed) g.completed = seq;
    if (seq < g.entered) continue;
    g.entered = seq;
    g.op = printable(op);
    g.state = printable(state);
    auto sizes = e.find("input_sizes");
    g.sizes = sizes == e.end()
                  ? ""
                  : printable(sizes->dump(-1, ' ', true, json::error_handler_t::replace));
  }
  for (auto& [name, g] : groups) r.groups.push_back(g);
  return r;
}

}  // namespace

FlightRecorderFiles add_flight_recorder_env(const std::string& pipe_stem,
                                            const std::string& dump_stem, int rank,
                                            std::map<std::string, std::string>& extra,
                                            const InheritedVar& inherited) {
  if (first_set(kBufferSize, inherited).empty()) extra[kBufferSize[0]] = kDefaultEntries;
  if (inherited(kDumpOnTimeout).empty()) extra[kDumpOnTimeout] = "1";
  std::string dump = first_set(kDumpFile, inherited);
  if (dump.empty()) dump = extra[kDumpFile[0]] = dump_stem;
  std::string pipe = inherited(kPipeFile);
  if (pipe.empty()) pipe = extra[kPipeFile] = pipe_stem;
  return {pipe + std::to_string(rank) + ".pipe", dump + std::to_string(rank)};
}

bool request_flight_record(const std::string& pipe) {
  // Nothing but a FIFO is opened for writing (a user's path may name anything).
  struct stat st {};
  if (::lstat(pipe.c_str(), &st) != 0 || !S_ISFIFO(st.st_mode)) return false;
  // Without a reader the open fails (ENXIO) rather than wait for one.
  int fd = ::open(pipe.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  bool written = ::fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode) && ::write(fd, "1", 1) == 1;
  ::close(fd);
  return written;
}

std::optional<FlightRecord> read_flight_record(std::string_view bytes) {
  json dump;
  if (!bytes.empty() && bytes.front() == '{') {
    // As deep as a pickle may nest, no deeper: what is read is walked recursively.
    constexpr int kMaxDepth = 100;
    struct TooDeep {};
    try {
      dump = json::parse(
          bytes,
          [](int depth, json::parse_event_t, json&) {
            if (depth > kMaxDepth) throw TooDeep{};
            return true;
          },
          false);
    } catch (const TooDeep&) {
      return std::nullopt;
    }
  } else {
    try {
      dump = read_pickle(bytes);
    } catch (const PickleError&) {
      return std::nullopt;
    }
  }
  if (!dump.is_object() || !dump.contains("entries") || !dump["entries"].is_array())
    return std::nullopt;
  return summarize(dump);
}

json to_json(const FlightRecord& r) {
  json groups = json::array();
  for (const auto& g : r.groups) {
    groups.push_back({{"group", g.group},
                      {"entered", g.entered},
                      {"op", g.op},
                      {"state", g.state},
                      {"sizes", g.sizes},
                      {"completed", g.completed}});
  }
  return {{"version", r.version}, {"groups", groups}};
}

FlightRecord flight_record_from_json(const json& j) {
  FlightRecord r;
  if (!j.is_object()) return r;
  r.version = field<std::string>(j, "version", "");
  auto groups = j.find("groups");
  if (groups == j.end() || !groups->is_array()) return r;
  for (const json& g : *groups) {
    if (!g.is_object()) continue;
    r.groups.push_back({field<std::string>(g, "group", ""), field<int64_t>(g, "entered", -1),
                        field<std::string>(g, "op", ""), field<std::string>(g, "state", ""),
                        field<std::string>(g, "sizes", ""), field<int64_t>(g, "completed", -1)});
  }
  return r;
}

namespace {

using GroupStates = std::map<int, const NcclGroupState*>;  // by rank

// Members of a group that never entered the collective the furthest member entered.
std::vector<int> behind(const GroupStates& members) {
  int64_t top = -1;
  for (const auto& [rank, g] : members) top = std::max(top, g->entered);
  std::vector<int> out;
  for (const auto& [rank, g] : members)
    if (g->entered < top) out.push_back(rank);
  return out;
}

// Members at the furthest collective that called another one than most did there
// (a different op or sizes): the smaller of two or more kinds, if one is smallest.
std::vector<int> mismatched(const GroupStates& members) {
  std::map<std::string, std::vector<int>> kinds;
  for (const auto& [rank, g] : members) kinds[g->op + " " + g->sizes].push_back(rank);
  if (kinds.size() < 2) return {};
  std::vector<std::vector<int>> sized;
  for (auto& [kind, ranks] : kinds) sized.push_back(ranks);
  std::sort(sized.begin(), sized.end(),
            [](const auto& a, const auto& b) { return a.size() < b.size(); });
  return sized[0].size() < sized[1].size() ? sized[0] : std::vector<int>{};
}

}  // namespace

CollectiveVerdict judge_collectives(const std::map<int, FlightRecord>& records) {
  CollectiveVerdict v;
  std::map<std::string, GroupStates> groups;  // "0" sorts first among numbered groups
  for (const auto& [rank, record] : records)
    for (const auto& g : record.groups) groups[g.group][rank] = &g;
  auto place = [&v](const GroupStates& members) {
    for (const auto& [rank, g] : members) v.places[describe_collective(*g)].push_back(rank);
  };
  for (const auto& [name, members] : groups) {
    if (members.size() < 2) continue;
    if ((v.culprits = behind(members)).size()) {
      v.why = "behind the others in NCCL collectives (flight recorder, process group " + name + ")";
    } else if ((v.culprits = mismatched(members)).size()) {
      v.why = "in another NCCL collective than the others (flight recorder, process group " + name +
              ")";
    } else {
      continue;
    }
    v.group = name;
    place(members);
    const NcclGroupState* others = nullptr;
    const std::set<int> culprits(v.culprits.begin(), v.culprits.end());
    for (const auto& [rank, g] : members)
      if (!culprits.count(rank)) others = g;
    v.note = "NCCL: at " + describe_collective(*members.at(v.culprits.front())) +
             (others ? ", the others at " + describe_collective(*others) : "");
    return v;
  }
  if (!groups.empty()) place(groups.begin()->second);
  return v;
}

std::string flight_record_note(const std::string& dump_path) {
  std::error_code ec;
  auto size = std::filesystem::file_size(dump_path, ec);
  if (ec || size == 0 || size > static_cast<uintmax_t>(kMaxFlightRecordBytes)) return "";
  std::ifstream in(dump_path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto record = read_flight_record(bytes);
  if (!record || record->groups.empty()) return "";
  std::string s = "NCCL flight recorder (" + dump_path + "):";
  const char* sep = " ";
  for (const auto& g : record->groups) {
    s += sep + std::string("process group ") + g.group + " at " + describe_collective(g);
    sep = "; ";
  }
  return s;
}

std::string describe_collective(const NcclGroupState& g) {
  if (g.entered < 0) return "no collective";
  std::string s = "#" + std::to_string(g.entered) + " " + g.op;
  if (!g.state.empty()) s += " (" + g.state + ")";
  return s;
}

}  // namespace ddprun::agent
