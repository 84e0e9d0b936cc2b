#include "agent/hang/hang_watch.h"

#include <algorithm>
#include <cstdio>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "agent/worker_group_runner.h"
#include "common/number_ranges.h"
#include "common/seconds_text.h"

namespace ddprun::agent {
namespace {

using std::chrono::milliseconds;

std::string seconds(milliseconds ms) {
  return seconds_text(static_cast<double>(ms.count()) / 1000);
}

}  // namespace

HangWatch::HangWatch(const AgentConfig& config, Clock& clock, WorkerGroupRunner& runner,
                     ProcessInspector* inspector, std::string host)
    : config_(config),
      clock_(clock),
      runner_(runner),
      inspector_(inspector),
      host_(std::move(host)),
      monitor_(config_.hang),
      timer_(clock.make_timer()) {}

HangWatch::~HangWatch() = default;

void HangWatch::start(std::function<void(const Stall&)> on_stall, ShareLongest share) {
  on_stall_ = std::move(on_stall);
  ++attempt_;
  share_ = config_.hang.mode == HangOptions::Mode::kAuto ? std::move(share) : nullptr;
  auto n = static_cast<int>(runner_.group().workers.size());
  last_look_ = clock_.now();
  last_share_ = last_look_;
  monitor_.start_attempt(n, last_look_);
  looks_.assign(static_cast<size_t>(n), Look{});
  timer_->start(monitor_.check_interval(), [this] { tick(); });
}

void HangWatch::stop() { timer_->cancel(); }

void HangWatch::tick() {
  milliseconds now = clock_.now();
  const auto& workers = runner_.group().workers;
  double elapsed_ms = static_cast<double>((now - last_look_).count());
  for (size_t i = 0; i < workers.size(); ++i) {
    monitor_.observe(static_cast<int>(i), runner_.progress(static_cast<int>(i)), now);
    if (!inspector_ || workers[i].state != WorkerState::kHealthy) continue;
    ProcessLook look = inspector_->look(workers[i].pid);
    Look& prev = looks_[i];
    if (prev.process.alive && look.alive && elapsed_ms > 0) {
      prev.cpu_percent =
          100.0 * static_cast<double>((look.cpu - prev.process.cpu).count()) / elapsed_ms;
    }
    prev.process = look;
  }
  last_look_ = now;
  if (share_ && now - last_share_ >= kShareInterval) share_longest(now);
  if (auto stall = monitor_.check(now)) {
    if (on_stall_) on_stall_(*stall);
    return;
  }
  timer_->start(monitor_.check_interval(), [this] { tick(); });
}

// Auto mode learns job-wide: ranks on other nodes may see longer quiet stretches
// (their phases differ, or they log less) that are just as normal as this node's.
void HangWatch::share_longest(milliseconds now) {
  last_share_ = now;
  share_(monitor_.longest_interval(), [this, attempt = attempt_](milliseconds job) {
    if (attempt == attempt_) monitor_.adopt_longest(job);
  });
}

std::string HangWatch::describe(const Stall& stall) const {
  const Worker& w = runner_.group().workers.at(static_cast<size_t>(stall.local_rank));
  std::string s = "no progress for " + seconds(stall.idle) + " (timeout " + seconds(stall.timeout);
  if (!stall.section.empty()) s += ", in section '" + stall.section + "'";
  return s + ") on rank " + std::to_string(w.global_rank) + " (local_rank " +
         std::to_string(w.local_rank) + ")";
}

void HangWatch::capture(std::function<void(std::string)> done) {
  capturing_ = true;
  ++hangs_;
  stop();
  const WorkerGroup& group = runner_.group();
  milliseconds now = clock_.now();
  auto reports = std::make_shared<std::vector<RankReport>>();
  std::vector<StackRequest> requests;
  for (size_t i = 0; i < group.workers.size(); ++i) {
    const Worker& w = group.workers[i];
    RankReport r;
    r.rank = w.global_rank;
    r.local_rank = w.local_rank;
    r.node = group.group_rank;
    r.host = host_;
    r.pid = w.pid;
    if (i < looks_.size()) {
      r.state = looks_[i].process.state;
      r.cpu_percent = looks_[i].cpu_percent;
      r.wait_channel = looks_[i].process.wait_channel;
    }
    if (config_.hang.enabled() && i < looks_.size()) {
      const HangMonitor::Progress& p = monitor_.progress(static_cast<int>(i));
      r.step = p.sample.step;
      r.idle_s = static_cast<double>((now - p.last).count()) / 1000;
      if (p.sample.in_section) r.section = p.sample.section;
    }
    if (w.state != WorkerState::kHealthy) {
      r.stack_note = "exited before the stacks were captured";
      r.state = 'X';
    }
    reports->push_back(r);
    std::string dir = runner_.worker_dir(w.local_rank);
    requests.push_back({w.state == WorkerState::kHealthy ? w.pid : -1,
                        dir + "/python_stacks.txt",
                        dir + "/native_stack.txt",
                        {w.flight_recorder_pipe, w.flight_recorder_dump}});
  }
  auto finish = [this, reports, done = std::move(done)](std::vector<CapturedStacks> stacks) {
    nlohmann::json part = nlohmann::json::array();
    for (size_t i = 0; i < reports->size(); ++i) {
      RankReport& r = (*reports)[i];
      if (i < stacks.size()) {
        r.python_stack = stacks[i].python;
        r.native_stack = stacks[i].native;
        if (r.stack_note.empty()) r.stack_note = stacks[i].note;
        r.nccl = std::move(stacks[i].flight_record);
        if (!r.nccl.groups.empty()) r.nccl_dump = runner_.group().workers[i].flight_recorder_dump;
      }
      describe_stacks(r);
      part.push_back(to_json(r));
    }
    capturing_ = false;
    done(part.dump());
  };
  if (!inspector_) return finish({});
  inspector_->capture(std::move(requests), finish);
}

HangWatch::Verdict HangWatch::judge(const std::vector<std::string>& parts) {
  Verdict v;
  std::vector<int> missing;
  for (size_t node = 0; node < parts.size(); ++node) {
    nlohmann::json j = nlohmann::json::parse(parts[node], nullptr, false);
    if (!j.is_array()) {
      missing.push_back(static_cast<int>(node));
      continue;
    }
    for (const auto& r : j) v.ranks.push_back(rank_report_from_json(r));
  }
  if (!missing.empty()) {
    v.missing =
        (missing.size() == 1 ? "node " : "nodes ") + number_ranges(missing) + " did not report";
  }
  std::sort(v.ranks.begin(), v.ranks.end(),
            [](const RankReport& a, const RankReport& b) { return a.rank < b.rank; });
  v.diagnosis = diagnose(v.ranks);
  for (const auto& r : v.ranks) {
    if (r.step && (!v.top_step || *r.step > *v.top_step)) v.top_step = r.step;
  }
  v.no_progress_limit = count_progress(v.top_step);
  return v;
}

std::string HangWatch::shared_verdict(const Verdict& v) {
  nlohmann::json top = v.top_step ? nlohmann::json(*v.top_step) : nlohmann::json(nullptr);
  return nlohmann::json{{"culprits", v.diagnosis.culprits},
                        {"why", v.diagnosis.why},
                        {"headline", v.diagnosis.headline},
                        {"summary", v.diagnosis.summary},
                        {"missing", v.missing},
                        {"top_step", top},
                        {"report_at", v.report_at}}
      .dump();
}

std::optional<HangWatch::Verdict> HangWatch::adopt(const std::string& shared,
                                                   const std::string& mine) {
  nlohmann::json j = nlohmann::json::parse(shared, nullptr, false);
  Verdict v;
  try {
    if (!j.is_object()) return std::nullopt;
    v.diagnosis.culprits = j.at("culprits").get<std::vector<int>>();
    v.diagnosis.why = j.at("why").get<std::string>();
    v.diagnosis.headline = j.at("headline").get<std::string>();
    v.diagnosis.summary = j.at("summary").get<std::string>();
    v.missing = j.at("missing").get<std::string>();
    if (!j.at("top_step").is_null()) v.top_step = j.at("top_step").get<int64_t>();
    v.report_at = j.at("report_at").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    spdlog::warn("hang: the judging node's verdict is unreadable ({}): {}", e.what(), shared);
    return std::nullopt;
  }
  v.own_ranks_only = true;
  nlohmann::json own = nlohmann::json::parse(mine, nullptr, false);
  if (own.is_array()) {
    for (const auto& r : own) v.ranks.push_back(rank_report_from_json(r));
  }
  v.no_progress_limit = count_progress(v.top_step);
  return v;
}

bool HangWatch::count_progress(std::optional<int64_t> top) {
  // In a row: a hang in the attempt right after the one that hung last. An attempt that
  // ended otherwise in between (a worker killed, a node lost) breaks the row: without
  // step numbers, hangs scattered over a long job read as one crash loop.
  int attempt = runner_.group().restart_count;
  bool in_a_row = last_hang_attempt_ && attempt == *last_hang_attempt_ + 1;
  bool progressed = top && (!hang_step_ || *top > *hang_step_);
  no_progress_ = in_a_row && !progressed ? no_progress_ + 1 : 0;
  if (progressed) hang_step_ = top;
  last_hang_attempt_ = attempt;
  return no_progress_ >= config_.hang.max_no_progress_restarts;
}

}  // namespace ddprun::agent
