#include "dashboard/routes.h"

#include <filesystem>
#include <map>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "dashboard/assets.h"
#include "dashboard/run_data.h"
#include "tracking/run_store.h"
#include "tracking/run_summary.h"
#include "tracking/run_reading.h"

namespace ddprun::dashboard {
namespace {

using nlohmann::json;

// Every page is the same document; the script draws the page its address names.
constexpr const char* kPage = R"(<!doctype html>
<html><head><meta charset="utf-8"><title>ddprun runs</title>
<link rel="stylesheet" href="/static/dygraph.min.css">
<link rel="stylesheet" href="/static/app.css"></head>
<body><div id="app"></div>
<script src="/static/dygraph.min.js"></script>
<script src="/static/app.js"></script>
</body></html>
)";

Response error(int status, const std::string& what) {
  return {status, "application/json", json{{"error", what}}.dump() + "\n"};
}

Response json_response(const json& j) {
  // Bytes a run holds need not be UTF-8: replaced, never an exception.
  return {200, "application/json", j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"};
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX and '+' decoded; nullopt for a broken escape.
std::optional<std::string> decode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] != '%') {
      out += s[i];
    } else {
      if (i + 2 >= s.size()) return std::nullopt;
      int hi = hex_digit(s[i + 1]);
      int lo = hex_digit(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    }
  }
  return out;
}

// name -> value; nullopt when a part cannot be decoded.
std::optional<std::map<std::string, std::string>> parse_query(std::string_view query) {
  std::map<std::string, std::string> out;
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (part.empty()) continue;
    size_t eq = part.find('=');
    auto name = decode(part.substr(0, eq));
    auto value = decode(eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1));
    if (!name || !value) return std::nullopt;
    out[*name] = *value;
  }
  return out;
}

// A run id names a directory of the tracking directory, never a path.
bool valid_id(const std::string& id) {
  return !id.empty() && id != "." && id != ".." && id.find('/') == std::string::npos &&
         id.find('\0') == std::string::npos;
}

std::optional<size_t> parse_size(const std::string& text) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  size_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<size_t>(c - '0');
  }
  return v;
}

}  // namespace

Routes::Routes(std::string tracking_dir) : tracking_dir_(std::move(tracking_dir)) {}

Response Routes::handle(std::string_view method, std::string_view target) const {
  if (method != "GET" && method != "HEAD") return error(405, "only GET and HEAD are served");
  size_t q = target.find('?');
  std::string_view path = target.substr(0, q);
  std::string_view query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
  if (path.rfind("/api/", 0) == 0) return api(path.substr(5), query);
  if (path.rfind("/static/", 0) == 0) {
    std::string_view name = path.substr(8);
    std::string_view bytes = asset(name);
    if (bytes.empty()) return error(404, "no such file: " + std::string(name));
    return {200, std::string(content_type(name)), std::string(bytes)};
  }
  if (path.rfind("/run/", 0) == 0) {
    // The page asks /api/runs/<ref> for the run; a run that is not there is said here.
    auto ref = decode(path.substr(5, path.find('/', 5) - 5));
    if (!ref || !valid_id(*ref)) return error(400, "malformed run id");
    try {
      tracking::find_run(tracking_dir_, *ref);
    } catch (const tracking::TrackingError& e) {
      return error(404, e.what());
    }
  }
  if (path == "/" || path == "/compare" || path.rfind("/run/", 0) == 0) {
    return {200, "text/html; charset=utf-8", kPage};
  }
  return error(404, "no such page: " + std::string(path));
}

Response Routes::api(std::string_view path, std::string_view query) const {
  auto params = parse_query(query);
  if (!params) return error(400, "malformed query string");
  try {
    if (path == "runs") {
      json list = json::array();
      for (const auto& r : tracking::list_runs(tracking_dir_)) list.push_back(summary_json(r));
      return json_response(list);
    }
    if (path.rfind("runs/", 0) != 0) return error(404, "no such endpoint: /api/" + std::string(path));
    std::string_view rest = path.substr(5);
    size_t slash = rest.find('/');
    auto id = decode(rest.substr(0, slash));
    std::string what = slash == std::string_view::npos ? "" : std::string(rest.substr(slash + 1));
    if (!id || !valid_id(*id)) return error(400, "malformed run id");
    try {
      id = tracking::find_run(tracking_dir_, *id);
    } catch (const tracking::TrackingError& e) {
      return error(404, e.what());
    }
    std::string run_dir = tracking_dir_ + "/" + *id;
    if (!std::filesystem::exists(run_dir + "/run.db")) {
      return error(404, "run '" + *id + "' crashed as it started: `ddprun runs repair " + *id +
                            "` makes the run from what its launcher left");
    }
    tracking::RunStore store(run_dir, tracking::RunStore::Open::kReadOnly);
    if (what.empty()) return json_response(run_json(store, *id, cache_.metric_counts(run_dir, store)));
    if (what == "system") return json_response(system_json(store));
    if (what != "metrics") return error(404, "no such endpoint: /api/" + std::string(path));
    auto key = params->find("key");
    if (key == params->end()) return error(400, "metrics: expected ?key=<metric>");
    size_t max_points = kDefaultMaxPoints;
    if (auto full = params->find("full"); full != params->end() && full->second == "1") {
      max_points = 0;
    } else if (auto mp = params->find("max_points"); mp != params->end()) {
      auto n = parse_size(mp->second);
      if (!n || *n < 3) return error(400, "max_points=" + mp->second + ": expected a number >= 3");
      max_points = *n;
    }
    json metric;
    cache_.with_series(run_dir, store, key->second, [&](const RunCache::Lines& lines) {
      metric = metric_json(key->second, lines, max_points);
    });
    if (metric.is_null()) return error(404, "run '" + *id + "' has no metric '" + key->second + "'");
    return json_response(metric);
  } catch (const std::exception& e) {
    return error(500, e.what());
  }
}

}  // namespace ddprun::dashboard
