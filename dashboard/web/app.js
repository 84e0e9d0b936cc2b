// The pages of `ddprun runs serve` and of `ddprun runs report` (one script for both):
// the runs list, a run, and runs compared. Charts are dygraphs; everything else is
// plain DOM. In a report the data is embedded (window.DDPRUN_REPORT); served, it comes
// from /api and is fetched again every 2 s while a run is running.
"use strict";
(function () {
  const REPORT = window.DDPRUN_REPORT || null;
  const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
                  "#17becf", "#bcbd22", "#7f7f7f"];
  const DASHES = [null, [6, 3], [2, 2], [8, 3, 2, 3]];  // attempt 0, 1, 2, 3, ...
  const REFRESH_MS = 2000;
  const app = document.getElementById("app");

  function el(tag, attrs, ...children) {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") n.className = v;
      else if (k.startsWith("on")) n.addEventListener(k.slice(2), v);
      else if (v !== null && v !== undefined && v !== false) n.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children.flat()) {
      if (c !== null && c !== undefined) n.append(c instanceof Node ? c : String(c));
    }
    return n;
  }
  const enc = encodeURIComponent;
  async function getJSON(url) {
    const r = await fetch(url, {cache: "no-store"});
    const j = await r.json();
    if (!r.ok) throw new Error(j.error || r.statusText);
    return j;
  }
  function pad(n) { return String(n).padStart(2, "0"); }
  function fmtTime(epoch) {
    if (!epoch) return "-";
    const d = new Date(epoch * 1000);
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
           `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  }
  function fmtClock(epoch) {
    const d = new Date(epoch * 1000);
    return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  }
  // One format for every duration (as `runs show` prints them): tenths under a minute.
  function fmtDuration(s) {
    if (s < 60) return s.toFixed(1) + " s";
    if (s < 3600) return Math.floor(s / 60) + " min " + Math.round(s % 60) + " s";
    return Math.floor(s / 3600) + " h " + Math.round((s % 3600) / 60) + " min";
  }
  function fmtValue(v) {
    if (v === null || v === undefined) return "-";
    if (typeof v !== "number") return typeof v === "string" ? v : JSON.stringify(v);
    return Math.abs(v) >= 1e5 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(4)
                                                                   : String(+v.toPrecision(6));
  }
  // Replaces a node's children, skipping the null ones.
  function fill(node, ...children) {
    node.replaceChildren(...children.flat().filter(c => c !== null && c !== undefined));
  }
  function statusBadge(status) { return el("span", {class: "status status-" + status}, status); }
  function table(header, rows, attrs) {
    return el("table", attrs || {}, el("thead", {}, el("tr", {}, header.map(h => el("th", {}, h)))),
              el("tbody", {}, rows));
  }

  // ---- the runs page ----------------------------------------------------------------
  function runsPage() {
    document.title = "ddprun runs";
    const selected = new Set();
    const filter = el("input", {type: "search", placeholder: "filter by name or id", id: "filter"});
    const status = el("select", {id: "status-filter"},
                      ["all", "running", "finished", "failed", "killed", "crashed"].map(
                          s => el("option", {value: s === "all" ? "" : s}, s)));
    const compare = el("button", {id: "compare", disabled: true, onclick: () => {
      location.href = "/compare?runs=" + [...selected].map(enc).join(",");
    }}, "compare selected");
    const body = el("tbody");
    app.append(el("h1", {}, "ddprun runs"),
               el("div", {class: "controls"}, filter, status, compare),
               el("table", {id: "runs"}, el("thead", {}, el("tr", {},
                  ["", "name", "id", "status", "started", "duration", "nodes × ranks", "restarts",
                   "goodput", "exit", "root cause"].map(h => el("th", {}, h)))), body));
    let runs = [];
    function draw() {
      const words = filter.value.toLowerCase();
      body.replaceChildren(...runs.filter(r => (!status.value || r.status === status.value) &&
          (!words || (r.name || "").toLowerCase().includes(words) || r.id.toLowerCase().includes(words)))
        .map(r => {
          if (r.error) {
            return el("tr", {"data-run": r.id, "data-status": "unreadable"}, el("td"),
                      el("td", {}, r.id), el("td", {}, r.id), el("td", {}, "unreadable"),
                      el("td", {colspan: 7}, r.error));
          }
          const box = el("input", {type: "checkbox", checked: selected.has(r.id), onchange: e => {
            if (e.target.checked) selected.add(r.id); else selected.delete(r.id);
            compare.disabled = selected.size < 2;
          }});
          return el("tr", {"data-run": r.id, "data-status": r.status},
                    el("td", {}, box), el("td", {}, el("a", {href: "/run/" + enc(r.id)}, r.name)),
                    el("td", {}, r.id), el("td", {}, statusBadge(r.status)),
                    el("td", {}, fmtTime(r.created)), el("td", {class: "num"}, fmtDuration(r.duration)),
                    el("td", {class: "num"}, r.nodes ? `${r.nodes} × ${r.ranks}` : "-"),
                    el("td", {class: "num"}, r.restarts),
                    el("td", {class: "num", "data-goodput": ""},
                       r.goodput && r.goodput.steps_seen ? (r.goodput.goodput * 100).toFixed(1) + "%" : "-"),
                    el("td", {class: "num"}, r.exit_code === null ? "-" : r.exit_code),
                    el("td", {class: "cause"}, r.root_cause || ""));
        }));
    }
    filter.addEventListener("input", draw);
    status.addEventListener("change", draw);
    async function load() {
      try { runs = await getJSON("/api/runs"); draw(); } catch (e) { showError(e); }
    }
    load();
    setInterval(load, REFRESH_MS);
  }

  function showError(e) {
    let box = document.getElementById("error");
    if (!box) app.prepend(box = el("p", {id: "error", class: "error"}));
    box.textContent = String(e.message || e);
  }

  // ---- series for dygraphs ------------------------------------------------------------
  // TensorBoard's smoothing: an exponential moving average, debiased at the start.
  function smooth(values, weight) {
    if (!weight) return values;
    let last = 0, n = 0;
    return values.map(v => {
      if (!Number.isFinite(v)) return v;
      last = last * weight + (1 - weight) * v;
      n += 1;
      return last / (1 - Math.pow(weight, n));
    });
  }

  // series: [{label, color, dash, points: [[x, y, wall]]}] -> the options and rows of a chart.
  function chartData(series, opts) {
    const xs = new Map();
    series.forEach(s => s.points.forEach(p => xs.set(p[0], true)));
    const sortedX = [...xs.keys()].sort((a, b) => a - b);
    const row = new Map(sortedX.map((x, i) => [x, i]));
    const rows = sortedX.map(x => [x, ...series.map(() => null)]);
    const walls = series.map(() => new Map());
    series.forEach((s, i) => {
      const ys = smooth(s.points.map(p => p[1]), opts.smoothing);
      s.points.forEach((p, j) => {
        rows[row.get(p[0])][i + 1] = ys[j];
        if (p.length > 2) walls[i].set(p[0], p[2]);
      });
    });
    const perSeries = {};
    series.forEach(s => {
      perSeries[s.label] = {color: s.color, strokePattern: s.dash || null,
                            drawPoints: s.points.length < 40, pointSize: 3};
    });
    return {rows, walls, perSeries};
  }

  function escapeHtml(text) {
    return String(text).replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"})[c]);
  }

  function legendFor(series, walls, xLabel) {
    return data => {
      if (data.x === null || data.x === undefined) return "";
      const lines = data.series.filter(s => s.isVisible && s.y !== null && s.y !== undefined)
        .map(s => {
          const i = series.findIndex(x => x.label === s.label);
          const wall = i >= 0 ? walls[i].get(data.x) : undefined;
          return `<div><span style="color:${s.color}">■</span> ${escapeHtml(s.label)}: <b>${fmtValue(s.y)}</b>` +
                 (wall ? ` <span class="wall">${fmtTime(wall)}</span>` : "") + "</div>";
        });
      return `<div>${xLabel} ${fmtValue(data.x)}</div>` + lines.join("");
    };
  }

  // An axis' numbers as written, not SI-prefixed (0.5, not 500m); thousands and up as k/M/B.
  function fmtAxis(v) {
    const a = Math.abs(v);
    for (const [unit, scale] of [["B", 1e9], ["M", 1e6], ["k", 1e3]]) {
      if (a >= scale * 10 || (unit !== "k" && a >= scale)) return +(v / scale).toPrecision(3) + unit;
    }
    return String(+v.toPrecision(4));
  }

  // One chart box; returns {update(series, opts)} to redraw with new data, keeping zoom.
  // Below the chart, a key names each line (rank and attempt, or run) in its colour.
  function makeChart(parent, title, attrs) {
    const graph = el("div", {class: "graph"});
    const key = el("div", {class: "key"});
    const box = el("div", Object.assign({class: "chart"}, attrs), el("h3", {}, title), graph, key);
    parent.append(box);
    let g = null, forced = false;
    return {
      box,
      update(series, opts) {
        const {rows, walls, perSeries} = chartData(series, opts);
        box.setAttribute("data-series", series.length);
        box.setAttribute("data-points", series.reduce((n, s) => n + s.points.length, 0));
        fill(key, series.map(s => el("span", {class: "key-entry", "data-label": s.label},
                                     el("span", {style: `color:${s.color}`}, s.dash ? "┄ " : "■ "), s.label)));
        if (!rows.length) return;
        const options = {
          file: rows, labels: [opts.xLabel, ...series.map(s => s.label)], series: perSeries,
          logscale: !!opts.log, connectSeparatedPoints: true, highlightCircleSize: 4,
          strokeWidth: 1.5, legend: "follow", xRangePad: 12, yRangePad: 8, xlabel: opts.xLabel,
          axes: {x: {axisLabelFormatter: fmtAxis}, y: {axisLabelFormatter: fmtAxis}},
          legendFormatter: legendFor(series, walls, opts.xLabel),
          underlayCallback: (ctx, area, dg) => markers(ctx, area, dg, opts.markers || []),
        };
        // One x alone would sit on the axis' edge: a window around it instead.
        if (rows.length === 1) {
          options.dateWindow = [rows[0][0] - 1, rows[0][0] + 1];
          forced = true;
        } else if (forced) {
          options.dateWindow = null;
          forced = false;
        }
        if (g) { g.updateOptions(options); return; }
        delete options.file;
        g = new Dygraph(graph, rows, Object.assign({width: 540, height: 240}, options));
      },
    };
  }

  // Vertical lines where restarts happened (x in the chart's units), labelled.
  function markers(ctx, area, dg, list) {
    ctx.save();
    ctx.strokeStyle = "#ff7f0e"; ctx.fillStyle = "#ff7f0e"; ctx.lineWidth = 1.5;
    ctx.setLineDash([4, 3]); ctx.font = "10px sans-serif";
    for (const m of list) {
      const x = dg.toDomXCoord(m.x);
      if (x < area.x || x > area.x + area.w) continue;
      ctx.beginPath(); ctx.moveTo(x, area.y); ctx.lineTo(x, area.y + area.h); ctx.stroke();
      ctx.fillText(m.label, x + 3, area.y + 10);
    }
    ctx.restore();
  }

  // ---- a run's page --------------------------------------------------------------------
  function source(id) {
    if (REPORT) {
      return {run: async () => REPORT.run, metric: async k => REPORT.metrics[k],
              system: async () => REPORT.system};
    }
    const base = "/api/runs/" + enc(id);
    return {run: () => getJSON(base), metric: k => getJSON(base + "/metrics?key=" + enc(k)),
            system: () => getJSON(base + "/system")};
  }

  function runPage(id) {
    const src = source(id);
    const opts = {x: "step", log: false, smoothing: 0};
    const head = el("div", {id: "run-head"});
    const controls = el("div", {class: "controls"},
      el("label", {}, "x axis ", el("select", {id: "x-axis", onchange: e => { opts.x = e.target.value; redraw(); }},
                                   el("option", {value: "step"}, "step"),
                                   el("option", {value: "time"}, "wall time (s)"))),
      el("label", {}, el("input", {type: "checkbox", id: "log-scale",
                                   onchange: e => { opts.log = e.target.checked; redraw(); }}), " log scale"),
      el("label", {}, "smoothing ", el("input", {type: "range", id: "smoothing", min: 0, max: 0.99, step: 0.01,
                                                 value: 0, oninput: e => { opts.smoothing = +e.target.value; redraw(); }})),
      el("span", {class: "hint"}, "drag to zoom, double-click to reset"));
    const charts = el("div", {id: "charts"});
    const system = el("div", {id: "system"});
    const timelineBox = el("div", {id: "timeline"});
    const hangs = el("div", {id: "hangs"});
    const stragglers = el("div", {id: "stragglers"});
    const tables = el("div", {id: "tables"});
    app.append(head, controls, el("h2", {}, "metrics"), charts, el("h2", {}, "system"), system,
               el("h2", {}, "timeline"), timelineBox, stragglers, hangs, tables);
    const state = {run: null, metrics: {}, system: null, counts: {}, events: -1};
    const chartsByKey = new Map();

    function restartMarkers(series, run) {
      if (opts.x === "time") {
        return run.events.filter(e => e.kind === "restart")
          .map((e, i) => ({x: e.wall - run.created, label: "restart " + (i + 1)}));
      }
      const firstX = new Map();  // attempt -> its first x
      for (const s of series) {
        if (s.attempt > 0 && s.points.length) {
          const x = s.points[0][0];
          if (!firstX.has(s.attempt) || x < firstX.get(s.attempt)) firstX.set(s.attempt, x);
        }
      }
      return [...firstX].map(([a, x]) => ({x, label: "attempt " + a}));
    }

    function metricSeries(metric, run) {
      const ranks = [...new Set(metric.series.map(s => s.rank))].sort((a, b) => a - b);
      return metric.series.map(s => ({
        label: `rank ${s.rank} · attempt ${s.attempt}`, rank: s.rank, attempt: s.attempt,
        color: COLORS[ranks.indexOf(s.rank) % COLORS.length], dash: DASHES[s.attempt % DASHES.length],
        points: opts.x === "time" ? s.points.map(p => [p[2] - run.created, p[1], p[2]]) : s.points,
      }));
    }

    function drawMetric(key) {
      const run = state.run, metric = state.metrics[key];
      if (!metric) return;
      let chart = chartsByKey.get(key);
      if (!chart) {
        if (!chartsByKey.size) charts.replaceChildren();  // the "no metrics" hint
        chart = makeChart(charts, key, {"data-metric": key});
        chartsByKey.set(key, chart);
      }
      const series = metricSeries(metric, run);
      chart.update(series, {xLabel: opts.x === "time" ? "seconds" : "step", log: opts.log,
                            smoothing: opts.smoothing, markers: restartMarkers(series, run)});
    }

    // System metrics: one chart per measure ("cpu", "proc.memory.rssMB", "gpu.0.gpu",
    // "memory_percent"), a line per rank or node.
    const systemCharts = new Map();
    function drawSystem() {
      const run = state.run, groups = new Map();
      for (const s of state.system.series) {
        const m = /^rank(\d+)\/(.*)$/.exec(s.key);
        const measure = m ? m[2] : s.key;
        const who = m ? "rank " + m[1] : "node " + s.node;
        if (!groups.has(measure)) groups.set(measure, []);
        groups.get(measure).push({label: who, points: s.points.map(p => [p[0] - run.created, p[1], p[0]])});
      }
      if (!groups.size) system.replaceChildren(el("p", {class: "hint"}, "no samples yet"));
      for (const [measure, series] of groups) {
        series.forEach((s, i) => { s.color = COLORS[i % COLORS.length]; });
        let chart = systemCharts.get(measure);
        if (!chart) {
          if (!systemCharts.size) system.replaceChildren();
          chart = makeChart(system, measure, {"data-system": measure});
          systemCharts.set(measure, chart);
        }
        chart.update(series, {xLabel: "seconds", log: false, smoothing: 0});
      }
    }

    function drawHead() {
      const r = state.run;
      document.title = "ddprun run " + r.name;
      fill(head,
        el("h1", {}, r.name, " ", statusBadge(r.status)),
        el("p", {class: "facts"},
           `id ${r.id} · started ${fmtTime(r.created)} · ${fmtDuration(r.duration)}` +
           (r.nodes ? ` · ${r.nodes} node(s) × ${r.ranks} rank(s)` : "") +
           (r.spares && r.spares.length ? ` · ${r.spares.length} spare(s) waiting: ${(r.spare_names || r.spares).join(", ")}` : "") +
           ` · ${r.restarts} restart(s)` +
           (r.membership_changes ? ` · ${r.membership_changes} membership change(s)` : "") +
           (r.exit_code === null ? "" : ` · exit code ${r.exit_code}`)),
        r.root_cause ? el("p", {class: "cause"}, "root cause: " + r.root_cause) : null,
        ...(r.quarantined || []).map(q => el("p", {class: "cause"},
           `quarantined: ${q.name || q.node} until ${fmtTime(q.until)} (${q.reason})`)),
        r.membership && r.membership.length ?
          el("details", {id: "membership"}, el("summary", {}, `membership: ${r.membership.length} change(s)`),
             el("ul", {}, ...r.membership.map(line => el("li", {}, line)))) : null,
        goodputLine(r.goodput),
        ...(r.stragglers || []).map(s => el("p", {class: "cause"},
           `straggler: ${s.who}: ${s.score.toFixed(1)}x the job's median own work per step ` +
           `(${s.own_s.toFixed(3)} s against ${s.median_s.toFixed(3)} s), named ${s.times} time(s), ` +
           `last ${fmtTime(s.last)}`)),
        REPORT ? null : el("p", {}, el("a", {href: "/"}, "all runs")));
    }

    function redraw() {
      for (const key of Object.keys(state.metrics)) drawMetric(key);
      if (state.system) drawSystem();
    }

    async function load() {
      try {
        const run = await src.run();
        const first = state.run === null;
        state.run = run;
        drawHead();
        const changed = Object.keys(run.metrics).filter(k => state.counts[k] !== run.metrics[k]);
        for (const key of changed) {
          state.metrics[key] = await src.metric(key);
          state.counts[key] = run.metrics[key];
          drawMetric(key);
        }
        if (!Object.keys(run.metrics).length) charts.replaceChildren(el("p", {class: "hint"}, "no metrics logged yet"));
        state.system = await src.system();
        drawSystem();
        if (first || run.events.length !== state.events) {
          state.events = run.events.length;
          timeline(timelineBox, run);
          drawStragglers(stragglers, run);
          drawHangs(hangs, run);
          drawTables(tables, run);
        }
        if (!REPORT && run.status === "running") setTimeout(load, REFRESH_MS);
      } catch (e) {
        showError(e);
        if (!REPORT) setTimeout(load, REFRESH_MS);
      }
    }
    load();
  }

  // Goodput accounting: the categories, their colours and their names.
  const GOODPUT = [["startup", "#62a0ea", "start-up"], ["productive", "#2ca02c", "productive"],
                   ["lost", "#d62728", "lost"], ["hang_wait", "#e66100", "hang wait"],
                   ["restart", "#9a9996", "restart"], ["shutdown", "#c0bfbc", "shutdown"]];

  function goodputLine(g) {
    if (!g) return null;
    if (!g.steps_seen) {
      return el("p", {class: "facts", id: "goodput"},
                "goodput unknown: no step was timed (PyTorch 2 jobs are timed by ddprun; others call ddprun_tracking.step())");
    }
    return el("p", {class: "facts", id: "goodput", "data-goodput": g.goodput.toFixed(4)},
              `goodput ${(g.goodput * 100).toFixed(1)}%: ` +
              GOODPUT.map(([key, , name]) => `${name} ${fmtDuration(g[key])}`).join(", "));
  }

  // Rows per node and rank, a bar per attempt (green: exit 0, red: the rank that failed,
  // light grey: the ranks stopped for it, grey: running), restarts as labelled lines, a
  // time axis, and the root cause.
  function timeline(box, run) {
    const events = run.events;
    const t0 = run.created || (events.length ? events[0].wall : 0);
    // A running job's timeline reaches now; a crashed one's ends at its last event.
    const last = Math.max(t0, ...events.map(e => e.wall));
    const end = run.finished || (run.status === "running" ? Math.max(Date.now() / 1000, last) : last);
    const span = Math.max(end - t0, 1e-3);
    const pct = t => Math.max(0, Math.min(100, (t - t0) / span * 100)) + "%";
    // A row per node and local rank, the node known by its host and agent (runs of
    // older agents: by group rank): a node that replaced another is a row of its own,
    // and a node kept out shows the gap on its own row.
    const rows = new Map();  // "host/agent/local rank" -> {node, rank, host, agent, local, bars}
    const open = new Map();  // "rank/attempt" -> its bar
    for (const e of events) {
      if (e.kind !== "worker_started" && e.kind !== "worker_exited") continue;
      const d = e.data || {};
      if (e.kind === "worker_started") {
        const local = d.local_rank === undefined ? e.rank : d.local_rank;
        const id = d.agent ? `${d.host}/${d.agent}/${local}` : `${e.node}/${e.rank}`;
        if (!rows.has(id)) rows.set(id, {node: e.node, rank: e.rank, host: d.host, agent: d.agent, local, bars: []});
        const bar = {start: e.wall, end: null, attempt: e.attempt, rank: e.rank, code: null};
        rows.get(id).bars.push(bar);
        open.set(e.rank + "/" + e.attempt, bar);
      } else {
        const bar = open.get(e.rank + "/" + e.attempt);
        if (bar) { bar.end = e.wall; bar.code = d.exitcode; }
      }
    }
    // In the order the nodes first came (the attempt, their group rank in it), each
    // node's local ranks in order.
    const sorted = [...rows.values()].sort((a, b) =>
      a.bars[0].attempt - b.bars[0].attempt || a.node - b.node || a.local - b.local);
    const agentsOn = new Map();  // host -> its agents
    for (const r of sorted) {
      if (!agentsOn.has(r.host)) agentsOn.set(r.host, new Set());
      if (r.agent) agentsOn.get(r.host).add(r.agent);
    }
    const nodeName = r => !r.agent ? `node ${r.node}`
      : r.host + (agentsOn.get(r.host).size > 1 ? ` (pid ${r.agent})` : "");
    // In each attempt the first rank to exit badly failed; the ones that exited badly
    // after it were stopped for it (as were all of a hung attempt's).
    const hung = new Set(events.filter(e => e.kind === "hang").map(e => e.attempt));
    const firstFailure = new Map();  // attempt -> the wall of its first bad exit
    for (const r of sorted) {
      for (const b of r.bars) {
        if (b.end === null || b.code === 0 || b.code === null) continue;
        if (!firstFailure.has(b.attempt) || b.end < firstFailure.get(b.attempt)) firstFailure.set(b.attempt, b.end);
      }
    }
    const stateOf = b => {
      if (b.end === null) return run.status === "running" ? "running" : "unknown";
      if (b.code === 0) return "ok";
      return hung.has(b.attempt) || b.end > firstFailure.get(b.attempt) ? "stopped" : "failed";
    };
    const lanes = el("div", {class: "lanes"});
    // Where the job's time went, above the ranks: a stretch per category, coloured.
    const g = run.goodput;
    if (g && g.steps_seen) {
      const lane = el("div", {class: "lane"});
      for (const a of g.attempts) {
        for (const [category, from, to] of a.segments) {
          const [, color, name] = GOODPUT.find(c => c[0] === category) || [category, "#777", category];
          lane.append(el("div", {class: "bar", "data-category": category,
                                 title: `attempt ${a.attempt}: ${name} ${fmtDuration(to - from)}`,
                                 style: `left:${pct(from)};width:calc(${pct(to)} - ${pct(from)});background:${color}`}));
        }
      }
      lanes.append(el("div", {class: "row", id: "goodput-lane"}, el("div", {class: "who"}, "where the time went"), lane));
    }
    for (const r of sorted) {
      const lane = el("div", {class: "lane"});
      for (const b of r.bars) {
        // No exit recorded: still running, or the run crashed before it was seen.
        const open = run.status === "running" ? "running" : "unknown";
        const state = stateOf(b);
        const stop = b.end === null ? end : b.end;
        const label = `attempt ${b.attempt}: ${fmtClock(b.start)}–${b.end === null ? open : fmtClock(b.end)}` +
                      (b.code === null ? "" : `, exit ${b.code}`);
        lane.append(el("div", {class: "bar bar-" + state,
                               title: `rank ${b.rank}, ${label}` + (state === "stopped" ? " (stopped)" : ""),
                               "data-attempt": b.attempt, "data-state": state,
                               style: `left:${pct(b.start)};width:calc(${pct(stop)} - ${pct(b.start)})`},
                       `a${b.attempt} r${b.rank}`));
      }
      for (const e of events.filter(e => e.kind === "restart" || e.kind === "job_stopped")) {
        lane.append(el("div", {class: "mark", style: `left:${pct(e.wall)}`}));
      }
      lanes.append(el("div", {class: "row", "data-node": r.node, "data-rank": r.rank,
                              "data-host": r.host || "", "data-local-rank": r.local},
                      el("div", {class: "who", title: nodeName(r)},
                         r.agent ? `${nodeName(r)} · local ${r.local}` : `node ${r.node} · rank ${r.rank}`),
                      lane));
    }
    const axis = el("div", {class: "axis"});
    for (let i = 0; i <= 4; i++) {
      axis.append(el("span", {style: `left:${i * 25}%`}, "+" + fmtDuration(span * i / 4)));
    }
    // Restarts and membership changes are counted apart, as the job's summary counts them.
    let restartNo = 0, changeNo = 0;
    const restarts = events.filter(e => e.kind === "restart")
      .map(e => el("li", {}, (e.data.kind === "membership" ? `membership change ${++changeNo}`
                                                          : `restart ${++restartNo}`) +
        ` at +${fmtDuration(e.wall - t0)}: ${e.data.reason || e.data.kind || ""}`));
    // torchrun's worker watchdog at work: which rank, which scope, how late.
    for (const e of events.filter(e => e.kind === "watchdog")) {
      restarts.push(el("li", {class: "watchdog"},
        `+${fmtDuration(e.wall - t0)}: the worker watchdog sent ${e.data.signal} to rank ${e.rank} ` +
        `(attempt ${e.attempt}): scope ${e.data.scope} expired after ${fmtDuration(e.data.timer_seconds || 0)}`));
    }
    const key = g && g.steps_seen
      ? el("p", {class: "hint"}, ...GOODPUT.map(([category, color, name]) =>
          el("span", {class: "key-entry", "data-category-total": category},
             el("span", {style: `color:${color}`}, "■ "), `${name} ${fmtDuration(g[category])}`)))
      : null;
    fill(box, lanes, el("div", {class: "row"}, el("div", {class: "who"}), axis), key,
                        restarts.length ? el("ul", {class: "restarts"}, restarts) : null,
                        run.root_cause ? el("p", {class: "cause"}, "root cause: " + run.root_cause) : null);
  }

  // Straggler detection's scores, a row per rank over the job's time: each judgement's
  // score colours its cell from grey (at or under the median) through amber to red (3x).
  function drawStragglers(box, run) {
    const samples = run.events.filter(e => e.kind === "straggler_scores" && e.data && Array.isArray(e.data.ranks));
    if (!samples.length) return box.replaceChildren();
    const t0 = run.created || samples[0].wall;
    const end = Math.max(run.finished || Date.now() / 1000, samples[samples.length - 1].wall + 1);
    const pct = t => Math.max(0, Math.min(100, (t - t0) / Math.max(end - t0, 1e-3) * 100)) + "%";
    const color = score => score <= 1 ? "#e8e8e8"
      : `hsl(${Math.max(0, 45 - (Math.min(score, 3) - 1) * 22.5)}, 85%, ${Math.max(45, 75 - (score - 1) * 15)}%)`;
    const rows = new Map();  // rank -> [{wall, score, until}]
    // A judgement holds until the next one of its attempt, or its attempt's end: the
    // rows are blank while no attempt runs.
    const exits = run.events.filter(e => e.kind === "worker_exited");
    const attemptEnd = attempt => {  // its last rank's exit; a running one's: now
      const walls = exits.filter(x => x.attempt === attempt).map(x => x.wall);
      return walls.length ? Math.max(...walls) : end;
    };
    samples.forEach((e, i) => {
      const next = i + 1 < samples.length && samples[i + 1].attempt === e.attempt ? samples[i + 1].wall : end;
      const until = Math.max(e.wall, Math.min(next, attemptEnd(e.attempt)));
      for (const [rank, score] of e.data.ranks) {
        if (!rows.has(rank)) rows.set(rank, []);
        rows.get(rank).push({wall: e.wall, score, until});
      }
    });
    const lanes = el("div", {class: "lanes"});
    for (const rank of [...rows.keys()].sort((a, b) => a - b)) {
      const lane = el("div", {class: "lane"});
      for (const c of rows.get(rank)) {
        lane.append(el("div", {class: "heat", title: `rank ${rank}: ${c.score}x the median at ${fmtClock(c.wall)}`,
                               "data-score": c.score,
                               style: `left:${pct(c.wall)};width:calc(${pct(c.until)} - ${pct(c.wall)});background:${color(c.score)}`}));
      }
      lanes.append(el("div", {class: "row", "data-straggler-rank": rank},
                      el("div", {class: "who"}, `rank ${rank}`), lane));
    }
    fill(box, el("h2", {}, "stragglers"),
         el("p", {class: "hint"}, "each rank's own work per step over the job's median, as judged " +
                                  "(grey: typical; red: 3x or more)"), lanes);
  }

  function drawHangs(box, run) {
    box.replaceChildren();
    for (const e of run.events.filter(e => e.kind === "hang" && e.data && typeof e.data === "object")) {
      box.append(el("h2", {}, "hang in attempt " + e.attempt), el("p", {}, e.data.reason || ""),
                 el("pre", {}, e.data.summary || ""));
      const kept = (e.data.ranks || []).length;
      if (e.data.ranks_total > kept) {
        box.append(el("p", {class: "hint"}, `stacks of ${kept} of ${e.data.ranks_total} ranks here ` +
                      "(the culprits, then one rank per place); every rank's: " +
                      (e.data.report_at || "the judging node's hang_node0.txt")));
      }
      for (const r of e.data.ranks || []) {
        // Where its NCCL flight recorder had it, per process group.
        const nccl = ((r.nccl && r.nccl.groups) || [])
          .map(g => `NCCL group ${g.group} at #${g.entered} ${g.op} (${g.state})`).join("; ");
        box.append(el("details", {}, el("summary", {}, `rank ${r.rank} (node ${r.node}, ${r.host}): ${r.where}` +
                                                        (nccl ? "; " + nccl : "")),
                      el("pre", {}, (r.python_stack || "") + (r.native_stack || "") || r.stack_note || "")));
      }
    }
    // A rank the worker watchdog reaped, with the stack taken just before.
    for (const e of run.events.filter(e => e.kind === "watchdog" && e.data && typeof e.data === "object")) {
      box.append(el("h2", {}, `worker watchdog in attempt ${e.attempt}`),
                 el("p", {}, `rank ${e.rank}: scope ${e.data.scope} expired after ` +
                             `${fmtDuration(e.data.timer_seconds || 0)}; ${e.data.signal} sent`),
                 el("details", {}, el("summary", {}, `rank ${e.rank}: ${e.data.where || "unknown"}`),
                    el("pre", {}, (e.data.python_stack || "") + (e.data.native_stack || "") ||
                                  e.data.stack_note || "")));
    }
  }

  // Values equal on every rank show once; differing ones per rank.
  function entryRows(entries) {
    const byKey = new Map();
    for (const e of entries) {
      const v = typeof e.value === "string" ? e.value : JSON.stringify(e.value);
      if (!byKey.has(e.key)) byKey.set(e.key, new Map());
      const ranks = byKey.get(e.key);
      ranks.set(e.rank, v);  // the latest attempt's value wins
    }
    const rows = [];
    for (const [key, ranks] of byKey) {
      const values = new Set(ranks.values());
      if (values.size === 1) rows.push(el("tr", {}, el("td", {}, key), el("td", {}, "all"), el("td", {}, [...values][0])));
      else for (const [rank, v] of ranks) rows.push(el("tr", {}, el("td", {}, key), el("td", {}, rank), el("td", {}, v)));
    }
    return rows;
  }

  function drawTables(box, run) {
    const launch = [];
    if (run.command) launch.push(el("tr", {}, el("td", {}, "command"), el("td", {}, Array.isArray(run.command) ? run.command.join(" ") : JSON.stringify(run.command))));
    if (run.launch_config && typeof run.launch_config === "object") {
      for (const [k, v] of Object.entries(run.launch_config)) {
        launch.push(el("tr", {}, el("td", {}, k), el("td", {}, typeof v === "string" ? v : JSON.stringify(v))));
      }
    }
    // A table with no rows is left out.
    const section = (title, header, rows, id) =>
      rows.length ? [el("h2", {}, title), table(header, rows, {id})] : [];
    fill(box, ...section("config", ["key", "rank", "value"], entryRows(run.config || []), "config"),
         ...section("summary", ["key", "rank", "value"], entryRows(run.summary || []), "summary"),
         ...section("launch", ["setting", "value"], launch, "launch"));
  }

  // ---- runs compared -------------------------------------------------------------------
  async function comparePage(ids) {
    document.title = "ddprun: compare " + ids.join(", ");
    app.append(el("h1", {}, "compare"), el("p", {}, el("a", {href: "/"}, "all runs")));
    let runs;
    try { runs = await Promise.all(ids.map(id => getJSON("/api/runs/" + enc(id)))); } catch (e) { return showError(e); }
    const keys = [...new Set(runs.flatMap(r => Object.keys(r.metrics)))].sort();
    const maxRank = Math.max(0, ...runs.map(r => r.ranks - 1));
    const keySel = el("select", {id: "metric"}, keys.map(k => el("option", {value: k}, k)));
    const rankSel = el("select", {id: "rank"}, el("option", {value: "mean"}, "mean over ranks"),
                       [...Array(maxRank + 1).keys()].map(r => el("option", {value: r}, "rank " + r)));
    const box = el("div", {id: "charts"});
    app.append(el("div", {class: "controls"}, el("label", {}, "metric ", keySel), el("label", {}, " ", rankSel)), box);
    const chart = makeChart(box, "", {"data-compare": "1"});
    async function draw() {
      const key = keySel.value;
      chart.box.querySelector("h3").textContent = key;
      const metrics = await Promise.all(runs.map(r => r.metrics[key] ? getJSON(`/api/runs/${enc(r.id)}/metrics?key=${enc(key)}`) : null));
      const series = runs.map((r, i) => ({label: r.name === r.id ? r.id : `${r.name} (${r.id})`,
                                          color: COLORS[i % COLORS.length], points: overlay(metrics[i], rankSel.value)}));
      chart.update(series.filter(s => s.points.length), {xLabel: "step", log: false, smoothing: 0});
    }
    keySel.addEventListener("change", draw);
    rankSel.addEventListener("change", draw);
    if (keys.length) draw();
    app.append(el("h2", {}, "config differences"), configDiff(runs));
  }

  // One line of a run for a metric: one rank's, or the mean over ranks at each x; where
  // attempts repeat an x, the later attempt's value counts.
  function overlay(metric, rank) {
    if (!metric) return [];
    const byX = new Map();  // x -> Map(rank -> [attempt, value])
    for (const s of metric.series) {
      if (rank !== "mean" && s.rank !== +rank) continue;
      for (const p of s.points) {
        if (!byX.has(p[0])) byX.set(p[0], new Map());
        const at = byX.get(p[0]), old = at.get(s.rank);
        if (!old || old[0] <= s.attempt) at.set(s.rank, [s.attempt, p[1]]);
      }
    }
    return [...byX].sort((a, b) => a[0] - b[0]).map(([x, at]) => {
      const vs = [...at.values()].map(v => v[1]);
      return [x, vs.reduce((a, b) => a + b, 0) / vs.length];
    });
  }

  function configDiff(runs) {
    const flat = runs.map(r => {
      const m = new Map();
      for (const e of r.config) m.set(e.key, typeof e.value === "string" ? e.value : JSON.stringify(e.value));
      if (r.launch_config && typeof r.launch_config === "object") {
        for (const [k, v] of Object.entries(r.launch_config)) m.set("launch." + k, typeof v === "string" ? v : JSON.stringify(v));
      }
      return m;
    });
    const keys = [...new Set(flat.flatMap(m => [...m.keys()]))].sort();
    const rows = keys.filter(k => new Set(flat.map(m => m.get(k))).size > 1)
      .map(k => el("tr", {}, el("td", {}, k), flat.map(m => el("td", {}, m.has(k) ? m.get(k) : "-"))));
    return rows.length ? table(["key", ...runs.map(r => r.name)], rows, {id: "config-diff"})
                       : el("p", {id: "config-diff"}, "the runs' config is the same");
  }

  // ---- which page ----------------------------------------------------------------------
  if (REPORT) {
    runPage(REPORT.run.id);
  } else if (location.pathname.startsWith("/run/")) {
    runPage(decodeURIComponent(location.pathname.slice(5)));
  } else if (location.pathname === "/compare") {
    const ids = (new URLSearchParams(location.search).get("runs") || "").split(",").filter(Boolean);
    comparePage(ids);
  } else {
    runsPage();
  }
})();
