// The dashboard's routes without a server: the JSON API against what run.db holds,
// downsampling that keeps spikes, errors (404, 400, 405), the built-in assets, and
// that answering never writes the database.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "dashboard/routes.h"
#include "tests/helpers/scratch.h"
#include "tracking/run_store.h"

namespace ddprun::dashboard {
namespace {

using nlohmann::json;
using tracking::Event;
using tracking::PointOrigin;
using tracking::RunStore;

std::string temp_dir() { return test::scratch_dir("ddprun_dash_"); }

// A finished 2-rank run with a restart: loss logged 3 times per rank and attempt.
void make_run(const std::string& dir, const std::string& id, double created,
              const std::string& status) {
  std::filesystem::create_directories(dir + "/" + id);
  RunStore s(dir + "/" + id, RunStore::Open::kCreate);
  s.set_meta("name", "name-" + id);
  s.set_meta("status", status);
  s.set_meta("created", std::to_string(created));
  s.set_meta("finished", std::to_string(created + 10));
  s.set_meta("exit_code", status == "finished" ? "0" : "1");
  s.add_event({created, "rendezvous", -1, -1, 0, R"({"members":["a","b"],"world_size":2})"});
  s.add_event({created + 5, "restart", -1, -1, 0, R"({"kind":"restart","reason":"rank 1 died"})"});
  s.begin();
  for (int attempt : {0, 1}) {
    for (int rank : {0, 1}) {
      for (int step = 0; step < 3; ++step) {
        PointOrigin at{rank, rank, attempt, step + 1, created + attempt * 5 + step, step};
        s.add_metric(at, "loss", 10.0 * attempt + rank + step / 10.0);
      }
    }
  }
  s.commit();
  s.add_config(0, 0, 0, "lr", "0.1");
  s.add_summary(0, 1, 1, "best", "\"<script>\"");
  s.add_system_metrics(0, created + 1, {{"memory_percent", 40}, {"rank0/cpu", 90}});
}

json body(const Response& r) { return json::parse(r.body); }

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(DashboardRoutes, RunsAreListedNewestFirstWithTheirSummary) {
  std::string dir = temp_dir();
  make_run(dir, "older", 1000, "finished");
  make_run(dir, "newer", 2000, "failed");
  Routes routes(dir);
  Response r = routes.handle("GET", "/api/runs");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "application/json");
  json runs = body(r);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0]["id"], "newer");
  EXPECT_EQ(runs[0]["status"], "failed");
  EXPECT_EQ(runs[0]["exit_code"], 1);
  EXPECT_EQ(runs[1]["id"], "older");
  EXPECT_EQ(runs[1]["name"], "name-older");
  EXPECT_EQ(runs[1]["nodes"], 2);
  EXPECT_EQ(runs[1]["ranks"], 2);
  EXPECT_EQ(runs[1]["restarts"], 1);
  EXPECT_DOUBLE_EQ(runs[1]["duration"].get<double>(), 10);
}

// A node lost, a spare in its place, and a node kept out: named by host everywhere.
TEST(DashboardRoutes, ARunsMembershipIsToldByHost) {
  std::string dir = temp_dir();
  make_run(dir, "elastic", 1000, "finished");
  {
    RunStore s(dir + "/elastic", RunStore::Open::kExisting);
    s.add_event(
        {1001, "rendezvous", -1, -1, 1,
         R"({"round":1,"members":["10.0.0.1/1/1","10.0.0.2/2/1"],"spares":["10.0.0.9/9/1"]})"});
    s.add_event(
        {1003, "restart", -1, -1, 1, R"({"kind":"membership","reason":"lost node(s) 10.0.0.2"})"});
    s.add_event({1004, "rendezvous", -1, -1, 1,
                 R"({"round":2,"members":["10.0.0.1/1/1","10.0.0.9/9/1"],)"
                 R"("quarantined":[{"node":"10.0.0.3/3/1","until":2000,"reason":"2 failures"}]})"});
  }
  Routes routes(dir);
  json run = body(routes.handle("GET", "/api/runs/elastic"));
  ASSERT_EQ(run["membership"].size(), 2u) << run.dump();  // from make_run's nodes a, b; then
  std::string line = run["membership"][1];
  EXPECT_EQ(line.find("+4.0 s round 2: lost node(s) 10.0.0.2; spare 10.0.0.9 took the place of "
                      "10.0.0.2; 10.0.0.3 kept out until "),
            0u)
      << line;
  ASSERT_EQ(run["quarantined"].size(), 1u);
  EXPECT_EQ(run["quarantined"][0]["name"], "10.0.0.3");
  EXPECT_EQ(run["quarantined"][0]["node"], "10.0.0.3/3/1");
}

TEST(DashboardRoutes, MetricSeriesHoldWhatTheDatabaseHolds) {
  std::string dir = temp_dir();
  make_run(dir, "r", 1000, "finished");
  Routes routes(dir);
  json m = body(routes.handle("GET", "/api/runs/r/metrics?key=loss"));
  EXPECT_EQ(m["points"], 12);
  ASSERT_EQ(m["series"].size(), 4u);  // 2 ranks x 2 attempts
  RunStore db(dir + "/r", RunStore::Open::kReadOnly);
  std::vector<tracking::MetricPoint> stored = db.metrics_of("loss");
  size_t i = 0;
  for (const auto& s : m["series"]) {
    for (const auto& p : s["points"]) {
      ASSERT_LT(i, stored.size());
      EXPECT_EQ(s["rank"], stored[i].rank);
      EXPECT_EQ(s["attempt"], stored[i].attempt);
      EXPECT_EQ(p[0].get<double>(), static_cast<double>(*stored[i].step));
      EXPECT_EQ(p[1].get<double>(), stored[i].value);
      EXPECT_EQ(p[2].get<double>(), stored[i].wall);
      ++i;
    }
  }
  EXPECT_EQ(i, stored.size());
  json run = body(routes.handle("GET", "/api/runs/r"));
  EXPECT_EQ(run["metrics"]["loss"], 12);
  EXPECT_EQ(run["config"][0]["key"], "lr");
  EXPECT_EQ(run["summary"][0]["value"], "<script>");
  EXPECT_EQ(run["events"][1]["kind"], "restart");
  EXPECT_EQ(run["events"][1]["data"]["reason"], "rank 1 died");
  json system = body(routes.handle("GET", "/api/runs/r/system"));
  ASSERT_EQ(system["series"].size(), 2u);
  EXPECT_EQ(system["series"][0]["key"], "memory_percent");
  EXPECT_EQ(system["series"][0]["points"][0][1], 40);
}

TEST(DashboardRoutes, LongSeriesAreDownsampledKeepingSpikesUnlessFullDataIsAsked) {
  std::string dir = temp_dir();
  std::filesystem::create_directories(dir + "/big");
  {
    RunStore s(dir + "/big", RunStore::Open::kCreate);
    s.set_meta("created", "1");
    s.begin();
    for (int i = 0; i < 20000; ++i) {
      double v = i == 12345 ? 1e6 : (i == 777 ? -1e6 : i % 7);
      s.add_metric(PointOrigin{0, 0, 0, i + 1, 1.0 + i, i}, "x", v);
    }
    s.commit();
  }
  Routes routes(dir);
  json m = body(routes.handle("GET", "/api/runs/big/metrics?key=x&max_points=300"));
  const json& points = m["series"][0]["points"];
  EXPECT_LE(points.size(), 301u);
  EXPECT_EQ(m["series"][0]["count"], 20000);
  auto has = [&](double v) {
    return std::any_of(points.begin(), points.end(), [&](const json& p) { return p[1] == v; });
  };
  EXPECT_TRUE(has(1e6)) << "the spike survives";
  EXPECT_TRUE(has(-1e6)) << "the dip survives";
  EXPECT_EQ(points.front()[0], 0);
  EXPECT_EQ(points.back()[0], 19999) << "the last point is kept";
  EXPECT_LE(body(routes.handle("GET", "/api/runs/big/metrics?key=x"))["series"][0]["points"].size(),
            Routes::kDefaultMaxPoints + 1);
  json full = body(routes.handle("GET", "/api/runs/big/metrics?key=x&full=1"));
  EXPECT_EQ(full["series"][0]["points"].size(), 20000u);
}

// What a page polling a running job sees: after each poll, exactly what run.db holds,
// whether points come in order, late (a part merged afterwards), or the run is made anew.
TEST(DashboardRoutes, PollsOfAGrowingRunSeeEveryPointOnce) {
  std::string dir = temp_dir();
  std::filesystem::create_directories(dir + "/g");
  auto as_stored = [&] {
    RunStore db(dir + "/g", RunStore::Open::kReadOnly);
    json lines = json::array();
    std::pair<int, int> line{-1, -1};
    for (const auto& p : db.metrics_of("loss")) {
      if (std::make_pair(p.rank, p.attempt) != line) {
        lines.push_back(json::array());
        line = {p.rank, p.attempt};
      }
      lines.back().push_back(p.value);
    }
    return lines;
  };
  Routes routes(dir);
  auto served = [&] {
    json m = body(routes.handle("GET", "/api/runs/g/metrics?key=loss&full=1"));
    json lines = json::array();
    for (const auto& s : m["series"]) {
      lines.push_back(json::array());
      for (const auto& p : s["points"]) lines.back().push_back(p[1]);
    }
    EXPECT_EQ(body(routes.handle("GET", "/api/runs/g"))["metrics"]["loss"], m["points"]);
    return lines;
  };
  {
    RunStore w(dir + "/g", RunStore::Open::kCreate);
    auto add = [&](int rank, int attempt, int64_t seq, double v) {
      w.begin();
      w.add_metric(PointOrigin{0, rank, attempt, seq, 1.0 * seq, std::nullopt}, "loss", v);
      w.commit();
    };
    add(0, 0, 1, 1);
    add(1, 0, 1, 10);
    EXPECT_EQ(served(), as_stored());
    add(0, 0, 2, 2);
    add(1, 1, 1, 11);  // a new attempt's line
    add(0, 0, 3, 3);
    EXPECT_EQ(served(), as_stored());
    add(0, 0, 0, 0.5);  // older than its line's last point: merged late
    EXPECT_EQ(served(), as_stored());
    EXPECT_EQ(served()[0][0], 0.5) << "in its line's order";
  }
  std::filesystem::remove_all(dir + "/g");
  std::filesystem::create_directories(dir + "/g");
  {
    RunStore w(dir + "/g", RunStore::Open::kCreate);
    w.begin();
    w.add_metric(PointOrigin{0, 3, 0, 1, 1.0, 7}, "loss", 42);
    w.commit();
  }
  EXPECT_EQ(served(), as_stored()) << "a run made again is read afresh";
  EXPECT_EQ(served(), json::parse("[[42.0]]"));
}

TEST(DashboardRoutes, UnknownThingsAre404AndMalformedQueries400) {
  std::string dir = temp_dir();
  make_run(dir, "r", 1000, "finished");
  Routes routes(dir);
  auto expect = [&](const char* target, int status, const std::string& says) {
    Response r = routes.handle("GET", target);
    EXPECT_EQ(r.status, status) << target << ": " << r.body;
    EXPECT_NE(body(r)["error"].get<std::string>().find(says), std::string::npos)
        << target << ": " << r.body;
  };
  expect("/api/runs/nope", 404, "no run 'nope'");
  expect("/api/runs/nope/metrics?key=loss", 404, "no run 'nope'");
  expect("/api/runs/r/metrics?key=acc", 404, "no metric 'acc'");
  expect("/api/runs/r/other", 404, "no such endpoint");
  expect("/nowhere", 404, "no such page");
  expect("/static/nothing.js", 404, "no such file");
  expect("/api/runs/r/metrics", 400, "expected ?key=");
  expect("/api/runs/r/metrics?key=%zz", 400, "malformed query");
  expect("/api/runs/r/metrics?key=loss&max_points=many", 400, "max_points=many");
  expect("/api/runs/r/metrics?key=loss&max_points=1", 400, "max_points=1");
  expect("/api/runs/..", 400, "malformed run id");
  expect("/api/runs/%2e%2e%2fr", 400, "malformed run id");
  EXPECT_EQ(routes.handle("POST", "/api/runs").status, 405);
  EXPECT_EQ(routes.handle("DELETE", "/api/runs/r").status, 405);
}

TEST(DashboardRoutes, PagesAndTheirScriptsAreBuiltIn) {
  std::string dir = temp_dir();
  make_run(dir, "x", 1000, "finished");
  Routes routes(dir);
  for (const char* page : {"/", "/run/x", "/compare?runs=a,b"}) {
    Response r = routes.handle("GET", page);
    EXPECT_EQ(r.status, 200) << page;
    EXPECT_NE(r.body.find("/static/app.js"), std::string::npos) << page;
    EXPECT_EQ(r.body.find("http"), std::string::npos) << page << ": nothing from the network";
  }
  Response dygraphs = routes.handle("GET", "/static/dygraph.min.js");
  EXPECT_EQ(dygraphs.content_type, "text/javascript; charset=utf-8");
  EXPECT_NE(dygraphs.body.find("Dygraph"), std::string::npos);
  EXPECT_EQ(dygraphs.body.size(),
            std::filesystem::file_size("/usr/share/javascript/dygraphs/dygraph.min.js"));
  EXPECT_NE(routes.handle("GET", "/static/app.js").body.find("runsPage"), std::string::npos);
  EXPECT_EQ(routes.handle("GET", "/static/app.css").content_type, "text/css; charset=utf-8");
}

TEST(DashboardRoutes, ARunIsFoundByItsNameAPrefixOrLatestAndAMissingOneIs404) {
  std::string dir = temp_dir();
  make_run(dir, "20261127-aaaa", 1000, "finished");
  make_run(dir, "20261127-bbbb", 2000, "failed");
  Routes routes(dir);
  EXPECT_EQ(body(routes.handle("GET", "/api/runs/name-20261127-aaaa"))["id"], "20261127-aaaa");
  EXPECT_EQ(body(routes.handle("GET", "/api/runs/20261127-b"))["id"], "20261127-bbbb");
  EXPECT_EQ(body(routes.handle("GET", "/api/runs/latest"))["id"], "20261127-bbbb");
  EXPECT_EQ(routes.handle("GET", "/run/name-20261127-aaaa").status, 200);
  Response missing = routes.handle("GET", "/run/my-first-run");
  EXPECT_EQ(missing.status, 404);
  EXPECT_NE(missing.body.find("no run 'my-first-run'"), std::string::npos) << missing.body;
  Response ambiguous = routes.handle("GET", "/api/runs/2026");
  EXPECT_EQ(ambiguous.status, 404);
  EXPECT_NE(ambiguous.body.find("20261127-aaaa"), std::string::npos) << ambiguous.body;
  EXPECT_NE(ambiguous.body.find("20261127-bbbb"), std::string::npos) << ambiguous.body;
}

TEST(DashboardRoutes, AnsweringNeverWritesTheRun) {
  std::string dir = temp_dir();
  make_run(dir, "r", 1000, "running");
  // A job still writing: its connection stays open with the WAL in use.
  RunStore writer(dir + "/r", RunStore::Open::kExisting);
  writer.add_event({1001, "worker_started", 0, 0, 1, "{}"});
  std::vector<std::string> files;
  // run.db and its WAL (a reader's read marks live in the -shm index, not in the data).
  for (const char* name : {"/run.db", "/run.db-wal"}) files.push_back(dir + "/r" + name);
  std::vector<std::string> before;
  for (const auto& f : files) before.push_back(file_bytes(f));
  Routes routes(dir);
  for (const char* target : {"/api/runs", "/api/runs/r", "/api/runs/r/metrics?key=loss",
                             "/api/runs/r/system", "/api/runs/r/metrics?key=nothing"}) {
    routes.handle("GET", target);
  }
  for (size_t i = 0; i < files.size(); ++i) {
    EXPECT_EQ(file_bytes(files[i]), before[i]) << files[i] << " changed";
  }
  // And the writer goes on while readers are open.
  tracking::RunStore reader(dir + "/r", RunStore::Open::kReadOnly);
  writer.add_event({1002, "worker_exited", 0, 0, 1, "{}"});
  EXPECT_EQ(reader.count_events("worker_exited"), 1);
}

}  // namespace
}  // namespace ddprun::dashboard
