// The agent's metrics: Prometheus' text format, and what the step tracker makes of the
// ranks' progress counters.
#include <gtest/gtest.h>

#include "agent/metrics/exposition.h"
#include "agent/metrics/job_metrics.h"
#include "agent/metrics/step_tracker.h"

namespace ddprun::agent {
namespace {

using std::chrono::milliseconds;

TEST(Exposition, WritesFamiliesSamplesAndEscapedLabels) {
  Exposition e;
  e.family("x_total", "counter", "A help\\text\nover two lines.");
  e.sample("x_total", {{"path", "a\"b\\c\nd"}}, 3);
  e.sample("x_total", {}, 0.25);
  EXPECT_EQ(e.text(),
            "# HELP x_total A help\\\\text\\nover two lines.\n# TYPE x_total counter\n"
            "x_total{path=\"a\\\"b\\\\c\\nd\"} 3\nx_total 0.25\n");
  EXPECT_EQ(exposition_number(1e20), "1e+20");
  EXPECT_EQ(exposition_number(-2), "-2");
}

TEST(Exposition, HistogramsAreCumulativeWithInfAndCount) {
  Exposition e;
  e.histogram("h", {}, {0.1, 1}, {2, 3}, 1, 7.5);
  EXPECT_EQ(e.text(),
            "h_bucket{le=\"0.1\"} 2\nh_bucket{le=\"1\"} 5\nh_bucket{le=\"+Inf\"} 6\nh_sum 7.5\n"
            "h_count 6\n");
}

ProgressSample at(uint64_t beats, std::optional<int64_t> step) {
  ProgressSample s;
  s.beats = beats;
  s.step = step;
  return s;
}

TEST(StepTracker, CountsStepsAndTheirTimes) {
  StepTracker t;
  t.start_attempt(2, milliseconds(0));
  t.observe(0, at(1, 1), milliseconds(1000));
  t.observe(0, at(2, 2), milliseconds(1200));   // one step of 0.2 s
  t.observe(0, at(5, 6), milliseconds(2000));   // four steps of 0.2 s
  t.observe(1, at(0, std::nullopt), milliseconds(2000));
  EXPECT_EQ(t.step(0), 6);
  EXPECT_FALSE(t.step(1));
  EXPECT_DOUBLE_EQ(t.seconds_since_progress(0, milliseconds(2500)), 0.5);
  EXPECT_DOUBLE_EQ(t.seconds_since_progress(1, milliseconds(2500)), 2.5) << "since its start";
  const auto& times = t.step_times();
  size_t quarter = 4;  // the 0.25 s bucket
  ASSERT_DOUBLE_EQ(times.bounds[quarter], 0.25);
  EXPECT_EQ(times.counts[quarter], 5u);
  EXPECT_NEAR(times.sum, 1.0, 1e-9);
}

TEST(StepTracker, ANewAttemptStartsOverButKeepsTheJobsStepTimes) {
  StepTracker t;
  t.start_attempt(1, milliseconds(0));
  t.observe(0, at(1, 10), milliseconds(100));
  t.observe(0, at(2, 11), milliseconds(400));
  t.start_attempt(1, milliseconds(500));
  t.observe(0, at(1, 1), milliseconds(600));  // the restarted rank's first step: no time yet
  EXPECT_EQ(t.step(0), 1);
  uint64_t counted = 0;
  for (auto c : t.step_times().counts) counted += c;
  EXPECT_EQ(counted, 1u);
}

TEST(JobMetrics, RenderNamesEveryFamilyOnce) {
  JobMetrics j;
  j.run_id = "r";
  j.ranks = {{0, 1.5, 7, 0.25, 2.5}, {1, 0.5, 7, std::nullopt, std::nullopt}};
  j.stores = {{"workers", 2, {{"set", 3}}}};
  j.goodput = JobMetrics::Goodput{0.75, {{"startup", 1}, {"productive", 6}, {"restart", 1}}};
  std::string text = render_metrics(j, ProcessMetrics{});
  for (const char* family : {"ddprun_info", "ddprun_restarts_total", "ddprun_rank_step",
                             "ddprun_step_seconds", "ddprun_store_requests_total",
                             "ddprun_rank_straggler_score", "ddprun_rank_own_seconds_per_step",
                             "ddprun_goodput_ratio", "ddprun_goodput_seconds",
                             "process_cpu_seconds_total"}) {
    std::string type = std::string("# TYPE ") + family + " ";
    auto first = text.find(type);
    EXPECT_NE(first, std::string::npos) << family;
    EXPECT_EQ(text.find(type, first + 1), std::string::npos) << family << " twice";
  }
  EXPECT_NE(text.find("ddprun_rank_step{rank=\"0\"} 7\n"), std::string::npos) << text;
  EXPECT_NE(text.find("ddprun_rank_straggler_score{rank=\"0\"} 2.5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("ddprun_rank_own_seconds_per_step{rank=\"0\"} 0.25\n"), std::string::npos);
  EXPECT_EQ(text.find("ddprun_rank_straggler_score{rank=\"1\"}"), std::string::npos);
  EXPECT_NE(text.find("ddprun_goodput_ratio 0.75\n"), std::string::npos);
  EXPECT_NE(text.find("ddprun_goodput_seconds{category=\"productive\"} 6\n"), std::string::npos);
  EXPECT_NE(text.find("ddprun_store_requests_total{store=\"workers\",op=\"set\"} 3\n"),
            std::string::npos);
}

TEST(JobMetrics, ASpareSaysSoAndHasNoNodeRank) {
  JobMetrics j;
  EXPECT_NE(render_metrics(j, ProcessMetrics{}).find("ddprun_spare 0\n"), std::string::npos);
  j.spare = true;
  std::string text = render_metrics(j, ProcessMetrics{});
  EXPECT_NE(text.find("ddprun_spare 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("ddprun_node_rank -1\n"), std::string::npos) << text;
}

TEST(ProcessMetrics, ReadsThisProcess) {
  ProcessMetrics p = read_process_metrics();
  EXPECT_GT(p.resident_bytes, 0);
  EXPECT_GT(p.open_fds, 2);
  EXPECT_GT(p.start_time_seconds, 1.6e9);
}

}  // namespace
}  // namespace ddprun::agent
