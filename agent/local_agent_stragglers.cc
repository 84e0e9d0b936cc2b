// Straggler detection (--straggler_threshold): every window, each node publishes what
// its ranks did (steps, and of their time the ranks' own work), group rank 0 judges
// the whole job from every node's part and names who slows it, and every node reads
// the job's median back for its metrics. Two quick store requests per node and window
// (group rank 0: one more, of one key per node).
#include <cstdio>
#include <numeric>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "agent/local_agent_impl.h"

namespace ddprun::agent {
namespace {

constexpr char kParts[] = "straggler_steps";
constexpr char kMedian[] = "straggler_median";
// How often the judging node records every rank's scores in the run, besides whenever
// it names someone: the dashboard's rank x time view, at a size that stays small.
constexpr std::chrono::seconds kScoresEvery{60};

std::string fixed(double v, int digits) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.*f", digits, v);
  return text;
}

nlohmann::json named_json(const StragglerJudge::Score& s, double median, bool node) {
  nlohmann::json d{{"kind", node ? "node" : "rank"},
                   {"node", s.node},
                   {"host", s.host},
                   {"score", s.score},
                   {"own_s", s.own_per_step},
                   {"median_s", median}};
  if (!node) d["rank"] = s.rank;
  return d;
}

}  // namespace

void LocalAgent::Impl::start_stragglers() {
  const auto& info = attempt_->info;
  own_per_step_.assign(static_cast<size_t>(config_.spec.local_world_size), std::nullopt);
  job_median_own_ = 0;
  if (!config_.stragglers.enabled() || info.world_size < 2) return;
  step_windows_.start_attempt(config_.spec.local_world_size, info.first_rank);
  straggler_judge_.reset();
  last_scores_ = std::nullopt;
  stragglers_watch_->start(config_.stragglers.window, [this] { judge_stragglers(); });
}

// One window: share this node's, judge the job's (group rank 0), learn its median.
void LocalAgent::Impl::judge_stragglers() {
  if (!runner_.running()) return;
  std::vector<RankSteps> mine;
  for (int i = 0; i < config_.spec.local_world_size; ++i) {
    mine.push_back(step_windows_.take(i, runner_.progress(i).timed));
    if (mine.back().steps) own_per_step_[static_cast<size_t>(i)] = mine.back().own_per_step();
  }
  round_->publish(kParts, encode_part(host_, mine));
  const auto& info = attempt_->info;
  // The next window is timed once this one's read is back (one read at a time).
  auto next_window = [this] {
    stragglers_watch_->start(config_.stragglers.window, [this] { judge_stragglers(); });
  };
  if (info.group_rank == 0) {
    std::vector<int> everyone(static_cast<size_t>(info.group_world_size));
    std::iota(everyone.begin(), everyone.end(), 0);
    round_->read_published(kParts, std::move(everyone), [this, next_window](auto parts) {
      if (!runner_.running()) return;  // the attempt ended meanwhile
      auto verdict = straggler_judge_.judge(parts, clock_.now());
      if (verdict.median_own > 0) {  // a window without steps keeps the last median
        round_->publish(kMedian, fixed(verdict.median_own, 9));
        say_stragglers(verdict);
        job_median_own_ = verdict.median_own;
      }
      next_window();
    });
  } else {
    round_->read_published(kMedian, {0}, [this, next_window](auto values) {
      if (!runner_.running()) return;
      double median = 0;
      if (!values.empty() && !values[0].empty() &&
          std::sscanf(values[0].c_str(), "%lf", &median) == 1 && median > 0) {
        job_median_own_ = median;
      }
      next_window();
    });
  }
}

// Group rank 0: names the stragglers on the console (each again only after a while) and
// in the run, and records every rank's score now and then.
void LocalAgent::Impl::say_stragglers(const StragglerJudge::Verdict& v) {
  int attempt = attempt_->info.restart_count;
  std::string median = fixed(v.median_own, 3);
  bool named = false;
  // A node whose ranks are all slow is named as the node, once, not rank by rank.
  std::set<int> slow_nodes;
  for (const auto& n : v.nodes) {
    if (!n.straggler) continue;
    slow_nodes.insert(n.node);
    if (!n.say) continue;
    named = true;
    spdlog::warn("straggler: node {} ({}): its ranks' own work per step is {}x the job's median "
                 "({} s against {} s)",
                 n.node, n.host, fixed(n.score, 1), fixed(n.own_per_step, 3), median);
    if (observer_) observer_->straggler_named(attempt, named_json(n, v.median_own, true).dump());
  }
  for (const auto& r : v.ranks) {
    if (!r.straggler || !r.say) continue;
    named = true;
    if (!slow_nodes.count(r.node)) {
      spdlog::warn("straggler: rank {} (node {}, {}): its own work per step, not waiting for the "
                   "others, is {}x the job's median ({} s against {} s)",
                   r.rank, r.node, r.host, fixed(r.score, 1), fixed(r.own_per_step, 3), median);
    }
    if (observer_) observer_->straggler_named(attempt, named_json(r, v.median_own, false).dump());
  }
  for (int rank : v.recovered) spdlog::info("rank {} is no longer a straggler", rank);
  exclude_straggler(v);
  auto now = clock_.now();
  if (!observer_ || (!named && v.recovered.empty() && last_scores_ && now - *last_scores_ < kScoresEvery)) {
    return;
  }
  last_scores_ = now;
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& r : v.ranks) ranks.push_back({r.rank, std::round(r.score * 100) / 100});
  observer_->straggler_scores(attempt, nlohmann::json{{"median_s", v.median_own}, {"ranks", ranks}}.dump());
}

}  // namespace ddprun::agent

namespace ddprun::agent {

// --straggler_action=exclude, group rank 0: the worst straggler's node (a slow rank's,
// or a slow node) leaves the job and the others go on in a new round, with a spare if
// one waits, where they are still at least MIN; otherwise it stays, said once a round.
void LocalAgent::Impl::exclude_straggler(const StragglerJudge::Verdict& v) {
  if (!config_.stragglers.exclude || attempt_->ending() || attempt_->exclusion_refused) return;
  const StragglerJudge::Score* worst = nullptr;
  for (const auto* scores : {&v.ranks, &v.nodes}) {
    for (const auto& s : *scores) {
      if (s.straggler && (!worst || s.score > worst->score)) worst = &s;
    }
  }
  if (!worst) return;
  const auto& info = attempt_->info;
  auto at = static_cast<size_t>(worst->node);
  std::string why;
  if (info.group_world_size < 2 || at >= info.members.size()) {
    why = "a job of one node cannot leave it out";
  } else {
    const std::string& id = info.members[at];
    without({id}, [this, id, node = worst->node, host = worst->host,
                   score = worst->score](const Without& w) {
      int left = w.left;
      if (left + w.spares >= config_.min_nodes) {
        spdlog::warn("straggler: node {} ({}) leaves the job (--straggler_action=exclude)",
                     node, host);
        leave_out({id}, "straggler node " + std::to_string(node) + " (" + host +
                            ") left out: its ranks' own work per step was " + fixed(score, 1) +
                            "x the job's median",
                  w);
        return;
      }
      refuse_exclusion(node, host,
                       "without it the job would have " + std::to_string(left) +
                           " node(s) and " + std::to_string(w.spares) +
                           " spare(s), and --nnodes asks for at least " +
                           std::to_string(config_.min_nodes));
    });
    return;
  }
  refuse_exclusion(worst->node, worst->host, why);
}

// The straggler's node stays (said once a round).
void LocalAgent::Impl::refuse_exclusion(int node, const std::string& host, const std::string& why) {
  if (attempt_->exclusion_refused) return;
  attempt_->exclusion_refused = true;
  spdlog::warn("straggler: node {} ({}) stays in the job: {}", node, host, why);
}

}  // namespace ddprun::agent
