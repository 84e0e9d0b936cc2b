// Goodput accounting's part in the agent: when this node's ranks stepped and what they
// declared durable, read from their progress pages (and the newest file of
// --checkpoint_dir), and told to the run (a "steps" event) at each attempt's end and
// every kMarksEvery while it runs. The run does the
// accounting (tracking/goodput.h) when it is read.
#include <nlohmann/json.hpp>

#include "agent/checkpoint_dir.h"
#include "agent/local_agent_impl.h"
#include "rendezvous/host_clock.h"

namespace ddprun::agent {
namespace {

constexpr std::chrono::seconds kMarksEvery{30};

}  // namespace

void LocalAgent::Impl::start_step_marks() {
  if (!observer_) return;
  marks_watch_->start(kMarksEvery, [this] {
    record_step_marks();
    start_step_marks();
  });
}

void LocalAgent::Impl::record_step_marks() {
  if (!observer_ || !attempt_) return;
  const auto& info = attempt_->info;
  int first = info.first_rank;
  nlohmann::json ranks = nlohmann::json::array();
  for (int i = 0; i < config_.spec.local_world_size; ++i) {
    ProgressSample s = runner_.progress(i);
    const StepMarks& m = s.marks;
    if (m.first_step_us == 0 && m.checkpoint_us == 0) continue;
    nlohmann::json r{{"rank", first + i},
                     {"steps", s.timed.steps},
                     {"first_us", m.first_step_us},
                     {"last_us", m.last_step_us},
                     {"checkpoint_us", m.checkpoint_us}};
    if (m.checkpoint_step) r["checkpoint_step"] = *m.checkpoint_step;
    ranks.push_back(std::move(r));
  }
  nlohmann::json d{{"ranks", ranks}};
  std::optional<int64_t> saved;
  if (!config_.checkpoint_dir.empty()) saved = newest_checkpoint_us(config_.checkpoint_dir);
  if (saved) d["checkpoint_dir_us"] = *saved;
  if (ranks.empty() && !saved) return;
  observer_->steps_marked(info.group_rank, info.restart_count, d.dump());
}

// The moment this node learned its round ends: the end of the attempt's useful work.
void LocalAgent::Impl::note_ended() {
  if (attempt_ && !attempt_->ended_wall) {
    attempt_->ended_wall = static_cast<double>(rendezvous::wall_clock_ms()) / 1000;
  }
}

// The running round's span as this node sees it now: how it ended, and its ranks' marks.
void LocalAgent::Impl::update_span() {
  if (span_ && attempt_) {
    tracking::AttemptSpan& now = *span_;
    now.hang = attempt_->over && attempt_->over->hang;
    bool ended_well = attempt_->over && attempt_->over->kind == RoundEnd::Kind::kFinal &&
                      attempt_->over->exitcode == 0;
    if (attempt_->ended_wall && !ended_well) now.failed = attempt_->ended_wall;
    auto seconds = [](int64_t us) { return static_cast<double>(us) / 1e6; };
    if (!config_.checkpoint_dir.empty()) {
      if (auto saved = newest_checkpoint_us(config_.checkpoint_dir)) {
        if (!now.checkpoint || seconds(*saved) > *now.checkpoint) now.checkpoint = seconds(*saved);
      }
    }
    for (int i = 0; i < config_.spec.local_world_size; ++i) {
      const StepMarks& m = runner_.progress(i).marks;
      if (m.first_step_us > 0 && (!now.first_step || seconds(m.first_step_us) < *now.first_step)) {
        now.first_step = seconds(m.first_step_us);
      }
      if (m.last_step_us > 0 && (!now.last_step || seconds(m.last_step_us) > *now.last_step)) {
        now.last_step = seconds(m.last_step_us);
      }
      if (m.checkpoint_us > 0 && (!now.checkpoint || seconds(m.checkpoint_us) > *now.checkpoint)) {
        now.checkpoint = seconds(m.checkpoint_us);
      }
    }
  }
}

// A round ends as the next begins: its time is settled, up to its failure (the time
// from there to the next round's first step is that round's restart).
void LocalAgent::Impl::settle_span() {
  if (!span_) return;
  double now = static_cast<double>(rendezvous::wall_clock_ms()) / 1000;
  double end = std::min(span_->failed.value_or(now), now);
  tracking::Goodput g = tracking::account_goodput(settled_until_, end, {*span_}, !settled_any_);
  settled_ += g.job;
  settled_until_ = std::max(settled_until_, end);
  settled_any_ = true;
  steps_seen_ = steps_seen_ || g.steps_seen;
  span_.reset();
}

// This node's accounting so far, for /metrics: its launch to now, over the rounds it
// ran, with its own ranks' steps (the run's, in `runs show`, takes every node's).
std::optional<tracking::TimeSplit> LocalAgent::Impl::node_goodput() {
  update_span();
  double now = static_cast<double>(rendezvous::wall_clock_ms()) / 1000;
  std::vector<tracking::AttemptSpan> current;
  if (span_) current.push_back(*span_);
  tracking::Goodput g = tracking::account_goodput(settled_until_, now, current, !settled_any_);
  if (!steps_seen_ && !g.steps_seen) return std::nullopt;
  tracking::TimeSplit s = settled_;
  return s += g.job;
}

}  // namespace ddprun::agent
