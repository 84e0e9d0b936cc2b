#include "tracking/record_lines.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

namespace ddprun::tracking {
namespace {

// A log record as the clients write it, read in one pass without building a tree:
// a flat object of k/seq/t/step and a "d" object of plain-keyed numbers.
struct FastLog {
  int64_t seq = 0;
  double wall = 0;
  std::optional<int64_t> step;
  std::vector<std::pair<std::string_view, double>> values;
};

class Cursor {
 public:
  explicit Cursor(std::string_view s) : p_(s.data()), end_(s.data() + s.size()) {}
  bool eat(char c) {
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }
  bool at_end() const { return p_ == end_; }
  // A string without escapes (anything else goes to the general parser).
  bool string(std::string_view& out) {
    if (!eat('"')) return false;
    const char* start = p_;
    while (p_ != end_ && *p_ != '"') {
      if (*p_ == '\\') return false;
      ++p_;
    }
    if (p_ == end_) return false;
    out = std::string_view(start, static_cast<size_t>(p_ - start));
    ++p_;
    return true;
  }
  template <typename T>
  bool number(T& out) {
    auto [ptr, ec] = std::from_chars(p_, end_, out);
    if (ec != std::errc() || ptr == p_) return false;
    p_ = ptr;
    return true;
  }
  bool literal(std::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word) {
      return false;
    }
    p_ += word.size();
    return true;
  }

 private:
  const char* p_;
  const char* end_;
};

bool parse_values(Cursor& c, FastLog& rec) {
  if (!c.eat('{')) return false;
  if (c.eat('}')) return true;
  do {
    std::string_view key;
    double v = 0;
    if (!c.string(key) || !c.eat(':')) return false;
    if (c.number(v)) rec.values.emplace_back(key, v);
    else if (c.literal("true")) rec.values.emplace_back(key, 1.0);
    else if (c.literal("false")) rec.values.emplace_back(key, 0.0);
    else if (!c.literal("null")) return false;  // strings, nested values: general parser
  } while (c.eat(','));
  return c.eat('}');
}

bool parse_fast_log(std::string_view line, FastLog& rec) {
  Cursor c(line);
  bool is_log = false;
  bool has_seq = false;
  if (!c.eat('{')) return false;
  do {
    std::string_view key;
    if (!c.string(key) || !c.eat(':')) return false;
    if (key == "k") {
      if (!c.literal("\"log\"")) return false;
      is_log = true;
    } else if (key == "seq") {
      if (!c.number(rec.seq)) return false;
      has_seq = true;
    } else if (key == "t") {
      if (!c.number(rec.wall)) return false;
    } else if (key == "step") {
      int64_t step = 0;
      if (!c.number(step)) return false;
      rec.step = step;
    } else if (key == "d") {
      if (!parse_values(c, rec)) return false;
    } else {
      return false;
    }
  } while (c.eat(','));
  return c.eat('}') && c.at_end() && is_log && has_seq;
}

double number_or_bool(const nlohmann::json& v) {
  return v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : v.get<double>();
}

// Any record, through a full JSON parser. False when it is not a record.
bool ingest_general(RunStore& store, std::string_view line, const StreamOrigin& o,
                    IngestStats& stats) {
  auto rec = nlohmann::json::parse(line);
  std::string kind = rec.at("k").get<std::string>();
  const auto& d = rec.at("d");
  if (kind == "log") {
    int64_t seq = rec.at("seq").get<int64_t>();
    double wall = rec.value("t", 0.0);
    std::optional<int64_t> step;
    if (rec.contains("step") && rec["step"].is_number_integer()) step = rec["step"].get<int64_t>();
    for (const auto& [k, v] : d.items()) {
      if (!v.is_number() && !v.is_boolean()) continue;  // numbers only
      store.add_metric({o.node, o.rank, o.attempt, seq, wall, step}, k, number_or_bool(v));
      ++stats.points;
    }
  } else if (kind == "config" || kind == "summary") {
    for (const auto& [k, v] : d.items()) {
      if (kind == "config") store.add_config(o.node, o.rank, o.attempt, k, v.dump());
      else store.add_summary(o.node, o.rank, o.attempt, k, v.dump());
    }
  } else if (kind == "event") {
    store.add_event({rec.value("t", 0.0), rec.at("kind").get<std::string>(), rec.value("node", -1),
                     rec.value("rank", -1), rec.value("attempt", -1), d.dump()});
  } else if (kind == "sys") {
    std::vector<std::pair<std::string, double>> values;
    for (const auto& [k, v] : d.items()) {
      if (v.is_number() || v.is_boolean()) values.emplace_back(k, number_or_bool(v));
    }
    store.add_system_metrics(rec.value("node", -1), rec.value("t", 0.0), values);
  } else if (kind == "meta" && o.launcher) {
    for (const auto& [k, v] : d.items()) store.set_meta(k, v.get<std::string>());
  } else {
    return false;
  }
  return true;
}

}  // namespace

bool parse_stream_name(const std::string& name, StreamOrigin& origin) {
  if (name == kAgentStream) {
    origin = StreamOrigin{};
    return true;
  }
  int used = 0;
  if (std::sscanf(name.c_str(), "n%d.r%d.a%d.jsonl%n", &origin.node, &origin.rank,
                  &origin.attempt, &used) != 3) {
    return false;
  }
  return static_cast<size_t>(used) == name.size();
}

std::vector<std::pair<std::string, std::string>> stream_files(const std::string& dir) {
  std::vector<std::pair<std::string, std::string>> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/streams", ec)) {
    out.emplace_back(e.path().filename(), e.path());
  }
  if (std::filesystem::exists(dir + "/" + kAgentStream, ec)) {
    out.emplace_back(kAgentStream, dir + "/" + kAgentStream);
  }
  StreamOrigin unused;
  std::erase_if(out, [&](const auto& f) { return !parse_stream_name(f.first, unused); });
  return out;
}

size_t ingest_lines(RunStore& store, std::string_view data, const StreamOrigin& origin,
                    bool final, IngestStats& stats) {
  size_t last_nl = data.rfind('\n');
  size_t complete = last_nl == std::string_view::npos ? 0 : last_nl + 1;
  FastLog fast;
  size_t pos = 0;
  while (pos < complete) {
    size_t nl = data.find('\n', pos);
    std::string_view line = data.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.empty()) continue;
    fast.step.reset();
    fast.values.clear();
    if (parse_fast_log(line, fast)) {
      PointOrigin at{origin.node, origin.rank, origin.attempt, fast.seq, fast.wall, fast.step};
      for (const auto& [k, v] : fast.values) store.add_metric(at, k, v);
      stats.points += static_cast<int64_t>(fast.values.size());
      ++stats.records;
      continue;
    }
    try {
      if (ingest_general(store, line, origin, stats)) ++stats.records;
      else ++stats.bad_lines;
    } catch (const nlohmann::json::exception&) {
      ++stats.bad_lines;
    }
  }
  if (final && complete < data.size()) {
    ++stats.torn_records;  // the writer died mid-record: skip it, keep the rest
    return data.size();
  }
  return complete;
}

std::string read_from(const std::string& path, int64_t offset, size_t max) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(0, std::ios::end);
  int64_t size = in.tellg();
  if (size <= offset) return {};
  std::string data(std::min(static_cast<size_t>(size - offset), max), '\0');
  in.seekg(offset);
  in.read(data.data(), static_cast<std::streamsize>(data.size()));
  data.resize(static_cast<size_t>(in.gcount()));
  return data;
}

void ingest_stream_file(RunStore& store, const std::string& key, const std::string& path,
                        const StreamOrigin& origin, bool final, IngestStats& stats) {
  int64_t offset = store.stream_offset(key);
  std::string data = read_from(path, offset);
  size_t consumed = ingest_lines(store, data, origin, final, stats);
  if (consumed > 0) store.set_stream_offset(key, offset + static_cast<int64_t>(consumed));
}

}  // namespace ddprun::tracking
