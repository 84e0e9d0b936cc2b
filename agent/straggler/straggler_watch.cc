#include "agent/straggler/straggler_watch.h"

#include <cmath>
#include <cstdio>
#include <numeric>
#include <set>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

namespace ddprun::agent {
namespace {

constexpr char kParts[] = "straggler_steps";
constexpr char kMedian[] = "straggler_median";

std::string fixed(double v, int digits) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.*f", digits, v);
  return text;
}

nlohmann::json named_json(const StragglerJudge::Score& s, double median, bool node) {
  nlohmann::json d{
      {"kind", node ? "node" : "rank"}, {"node", s.node},    {"host", s.host}, {"score", s.score},
      {"own_s", s.own_per_step},        {"median_s", median}};
  if (!node) d["rank"] = s.rank;
  return d;
}

}  // namespace

StragglerWatch::StragglerWatch(const AgentConfig& config, const rendezvous::RendezvousInfo& info,
                               std::string host, rendezvous::RoundCoordinator& round,
                               const WorkerProgress& workers, Clock& clock,
                               tracking::RunObserver* observer, Exclude exclude)
    : config_(config),
      info_(info),
      host_(std::move(host)),
      round_(round),
      workers_(workers),
      clock_(clock),
      observer_(observer),
      exclude_(std::move(exclude)),
      window_(clock.make_timer()),
      judge_({config.stragglers.threshold}),
      own_per_step_(static_cast<size_t>(config.spec.local_world_size)) {
  if (!config_.stragglers.enabled() || info_.world_size < 2) return;
  windows_.start_attempt(config_.spec.local_world_size, info_.first_rank);
  start_window();
}

std::optional<double> StragglerWatch::own_per_step(int local_rank) const {
  return own_per_step_.at(static_cast<size_t>(local_rank));
}

std::optional<double> StragglerWatch::score(int local_rank) const {
  auto own = own_per_step(local_rank);
  if (!own || job_median_ <= 0) return std::nullopt;
  return straggler_score(*own, job_median_);
}

// The next window is timed once this one's read is back (one read at a time).
void StragglerWatch::start_window() {
  window_->start(config_.stragglers.window, [this] { judge_window(); });
}

// One window: share this node's, judge the job's (group rank 0), learn its median.
void StragglerWatch::judge_window() {
  if (!workers_.running()) return;
  std::vector<RankSteps> mine;
  for (int i = 0; i < config_.spec.local_world_size; ++i) {
    mine.push_back(windows_.take(i, workers_.progress(i).timed));
    if (mine.back().steps) own_per_step_[static_cast<size_t>(i)] = mine.back().own_per_step();
  }
  round_.publish(kParts, encode_part(host_, mine));
  if (info_.group_rank == 0) {
    std::vector<int> everyone(static_cast<size_t>(info_.group_world_size));
    std::iota(everyone.begin(), everyone.end(), 0);
    round_.read_published(kParts, std::move(everyone), [this](auto parts) {
      if (!workers_.running()) return;  // the attempt ended meanwhile
      auto verdict = judge_.judge(parts, clock_.now());
      if (verdict.median_own > 0) {  // a window without steps keeps the last median
        round_.publish(kMedian, fixed(verdict.median_own, 9));
        say(verdict);
        job_median_ = verdict.median_own;
      }
      start_window();
    });
    return;
  }
  round_.read_published(kMedian, {0}, [this](auto values) {
    if (!workers_.running()) return;
    double median = 0;
    if (!values.empty() && !values[0].empty() &&
        std::sscanf(values[0].c_str(), "%lf", &median) == 1 && median > 0) {
      job_median_ = median;
    }
    start_window();
  });
}

// Group rank 0: names the stragglers on the console (each again only after a while) and
// in the run, and records every rank's score now and then.
void StragglerWatch::say(const StragglerJudge::Verdict& v) {
  int attempt = info_.restart_count;
  std::string median = fixed(v.median_own, 3);
  bool named = false;
  // A node whose ranks are all slow is named as the node, once, not rank by rank.
  std::set<int> slow_nodes;
  for (const auto& n : v.nodes) {
    if (!n.straggler) continue;
    slow_nodes.insert(n.node);
    if (!n.say) continue;
    named = true;
    spdlog::warn(
        "straggler: node {} ({}): its ranks' own work per step is {}x the job's median "
        "({} s against {} s)",
        n.node, n.host, fixed(n.score, 1), fixed(n.own_per_step, 3), median);
    if (observer_) observer_->straggler_named(attempt, named_json(n, v.median_own, true).dump());
  }
  for (const auto& r : v.ranks) {
    if (!r.straggler || !r.say) continue;
    named = true;
    if (!slow_nodes.count(r.node)) {
      spdlog::warn(
          "straggler: rank {} (node {}, {}): its own work per step, not waiting for the "
          "others, is {}x the job's median ({} s against {} s)",
          r.rank, r.node, r.host, fixed(r.score, 1), fixed(r.own_per_step, 3), median);
    }
    if (observer_) observer_->straggler_named(attempt, named_json(r, v.median_own, false).dump());
  }
  for (int rank : v.recovered) spdlog::info("rank {} is no longer a straggler", rank);
  exclude_worst(v);
  auto now = clock_.now();
  if (!observer_ ||
      (!named && v.recovered.empty() && last_scores_ && now - *last_scores_ < kScoresEvery)) {
    return;
  }
  last_scores_ = now;
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& r : v.ranks) ranks.push_back({r.rank, std::round(r.score * 100) / 100});
  observer_->straggler_scores(attempt,
                              nlohmann::json{{"median_s", v.median_own}, {"ranks", ranks}}.dump());
}

// --straggler_action=exclude: the worst straggler (a slow rank's node, or a slow node).
void StragglerWatch::exclude_worst(const StragglerJudge::Verdict& v) {
  if (!config_.stragglers.exclude || refused_) return;
  const StragglerJudge::Score* worst = nullptr;
  for (const auto* scores : {&v.ranks, &v.nodes}) {
    for (const auto& s : *scores) {
      if (s.straggler && (!worst || s.score > worst->score)) worst = &s;
    }
  }
  if (!worst) return;
  auto at = static_cast<size_t>(worst->node);
  if (info_.group_world_size < 2 || at >= info_.members.size()) {
    refuse(worst->node, worst->host, "a job of one node cannot leave it out");
    return;
  }
  exclude_(*worst, info_.members[at]);
}

void StragglerWatch::refuse(int node, const std::string& host, const std::string& why) {
  if (refused_) return;
  refused_ = true;
  spdlog::warn("straggler: node {} ({}) stays in the job: {}", node, host, why);
}

}  // namespace ddprun::agent
