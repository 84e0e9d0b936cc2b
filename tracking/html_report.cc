#include "tracking/html_report.h"

#include <map>

#include <nlohmann/json.hpp>

namespace ddprun::tracking {
namespace {

// Draws line charts on canvases from the embedded DATA: one chart per metric with a
// line per rank and attempt (x = step when logged, else sequence), one per system
// metric, a timeline of workers per attempt (green: exit 0, red: failed or stopped) with
// restarts marked, and every hang with its culprit and each rank's stacks. Written for
// this report; no library.
constexpr const char* kScript = R"JS(
const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
function chart(title, series, xLabel) {
  const box = document.createElement("div"); box.className = "chart";
  const h = document.createElement("h3"); h.textContent = title; box.appendChild(h);
  const c = document.createElement("canvas"); c.width = 560; c.height = 260; box.appendChild(c);
  document.getElementById("charts").appendChild(box);
  const g = c.getContext("2d"), L = 50, R = 10, T = 10, B = 30;
  let xs = [], ys = [];
  for (const s of series) for (const p of s.points) { xs.push(p[0]); ys.push(p[1]); }
  if (!xs.length) return;
  let x0 = Math.min(...xs), x1 = Math.max(...xs), y0 = Math.min(...ys), y1 = Math.max(...ys);
  if (x1 === x0) x1 = x0 + 1; if (y1 === y0) { y1 = y0 + 1; y0 = y0 - 1; }
  const X = v => L + (v - x0) / (x1 - x0) * (c.width - L - R);
  const Y = v => c.height - B - (v - y0) / (y1 - y0) * (c.height - T - B);
  g.strokeStyle = "#999"; g.lineWidth = 1; g.beginPath();
  g.moveTo(L, T); g.lineTo(L, c.height - B); g.lineTo(c.width - R, c.height - B); g.stroke();
  g.fillStyle = "#333"; g.font = "11px sans-serif";
  g.fillText(y1.toPrecision(4), 2, T + 8); g.fillText(y0.toPrecision(4), 2, c.height - B);
  g.fillText(String(x0), L, c.height - 12); g.fillText(String(x1), c.width - R - 40, c.height - 12);
  g.fillText(xLabel, c.width / 2 - 20, c.height - 2);
  series.forEach((s, i) => {
    g.strokeStyle = COLORS[i % COLORS.length]; g.lineWidth = 2; g.beginPath();
    // A new attempt starts a new line (p[2] is the attempt, when there is one).
    s.points.forEach((p, j) => (j && p[2] === s.points[j - 1][2]) ? g.lineTo(X(p[0]), Y(p[1]))
                                                                  : g.moveTo(X(p[0]), Y(p[1])));
    g.stroke();
    g.fillStyle = COLORS[i % COLORS.length]; g.fillText(s.name, c.width - R - 80, T + 12 + 12 * i);
  });
}
function timeline(events) {
  const box = document.createElement("div"); box.className = "chart";
  const h = document.createElement("h3"); h.textContent = "timeline (workers per attempt, restarts)"; box.appendChild(h);
  const c = document.createElement("canvas"); c.width = 560; c.height = 120; box.appendChild(c);
  document.getElementById("charts").appendChild(box);
  const g = c.getContext("2d");
  if (!events.length) return;
  const t0 = events[0].wall, t1 = Math.max(events[events.length - 1].wall, t0 + 1e-3);
  const X = t => 10 + (t - t0) / (t1 - t0) * (c.width - 20);
  const starts = {};
  for (const e of events) {
    const key = e.rank + "/" + e.attempt;
    if (e.kind === "worker_started") starts[key] = e.wall;
    if (e.kind === "worker_exited" && key in starts) {
      const ok = (e.data.exitcode || 0) === 0;
      g.fillStyle = ok ? "#2ca02c" : "#d62728";
      g.fillRect(X(starts[key]), 10 + 14 * (e.rank % 6), Math.max(2, X(e.wall) - X(starts[key])), 10);
    }
    if (e.kind === "restart" || e.kind === "job_stopped") {
      g.strokeStyle = "#ff7f0e"; g.lineWidth = 2; g.beginPath();
      g.moveTo(X(e.wall), 0); g.lineTo(X(e.wall), c.height); g.stroke();
    }
  }
}
for (const [name, ranks] of Object.entries(DATA.metrics)) {
  chart(name, Object.entries(ranks).map(([r, pts]) => ({name: "rank " + r, points: pts})), "step");
}
for (const [name, pts] of Object.entries(DATA.system)) chart(name, [{name: name, points: pts}], "seconds");
timeline(DATA.events);
// Every hang: who hung and where each rank was, with each rank's stacks folded away.
function text(tag, content) { const n = document.createElement(tag); n.textContent = content; return n; }
for (const e of DATA.events.filter(e => e.kind === "hang" && e.data)) {
  const box = document.getElementById("hangs");
  box.appendChild(text("h2", "hang in attempt " + e.attempt));
  box.appendChild(text("p", e.data.reason || ""));
  box.appendChild(text("pre", e.data.summary || ""));
  for (const r of e.data.ranks || []) {
    const d = document.createElement("details");
    d.appendChild(text("summary", "rank " + r.rank + " (node " + r.node + ", " + r.host + "): " + r.where));
    d.appendChild(text("pre", (r.python_stack || "") + (r.native_stack || "") || r.stack_note || ""));
    box.appendChild(d);
  }
}
)JS";

std::string escape_html(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string html_report(RunStore& store, const std::string& run_id) {
  nlohmann::json data;
  data["metrics"] = nlohmann::json::object();
  for (const auto& p : store.metrics()) {
    double x = p.step ? static_cast<double>(*p.step) : static_cast<double>(p.seq);
    data["metrics"][p.key][std::to_string(p.rank)].push_back({x, p.value, p.attempt});
  }
  data["system"] = nlohmann::json::object();
  double first = 0;
  for (const auto& [wall, key, value] : store.system_metrics()) {
    if (first == 0) first = wall;
    data["system"][key].push_back({wall - first, value});
  }
  data["events"] = nlohmann::json::array();
  for (const auto& e : store.events()) {
    nlohmann::json d = nlohmann::json::parse(e.data_json, nullptr, false);
    data["events"].push_back({{"wall", e.wall},
                              {"kind", e.kind},
                              {"rank", e.rank},
                              {"attempt", e.attempt},
                              {"data", d.is_discarded() ? nullptr : d}});
  }
  std::string status = store.meta("status").value_or("unknown");
  std::string json = data.dump();
  // "</" inside the embedded JSON must not close the script element.
  for (size_t pos = 0; (pos = json.find("</", pos)) != std::string::npos; pos += 3) {
    json.replace(pos, 2, "<\\/");
  }
  return "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>ddprun run " +
         escape_html(run_id) +
         "</title>\n<style>body{font-family:sans-serif;margin:20px}"
         ".chart{display:inline-block;margin:8px;border:1px solid #ddd;padding:6px}"
         "h3{font-size:13px;margin:2px}</style></head><body>\n<h1>run " +
         escape_html(run_id) + "</h1>\n<p>status: " + escape_html(status) +
         "</p>\n<div id=\"charts\"></div>\n<div id=\"hangs\"></div>\n<script>const DATA = " + json +
         ";\n" + kScript + "</script>\n</body></html>\n";
}

}  // namespace ddprun::tracking
