#include "agent/goodput/goodput_spans.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "agent/checkpoint_dir.h"

namespace ddprun::agent {
namespace {

double seconds(int64_t us) { return static_cast<double>(us) / 1e6; }

// Keeps the earlier (`earliest`) or the later of `have` and `seen`.
void keep(std::optional<double>& have, double seen, bool earliest) {
  if (!have || (earliest ? seen < *have : seen > *have)) have = seen;
}

}  // namespace

GoodputSpans::GoodputSpans(int local_world_size, std::string checkpoint_dir,
                           const WorkerProgress& workers, Clock& clock,
                           tracking::RunObserver* observer, WallClock wall)
    : local_world_size_(local_world_size),
      checkpoint_dir_(std::move(checkpoint_dir)),
      workers_(workers),
      observer_(observer),
      wall_(std::move(wall)),
      marks_watch_(clock.make_timer()),
      settled_until_(wall_()) {}

void GoodputSpans::begin_attempt(const rendezvous::RendezvousInfo& info) {
  settle_last_round();
  attempt_ = Attempt{info.restart_count, info.group_rank, info.first_rank,
                     tracking::AttemptSpan{info.restart_count, wall_(), std::nullopt, false,
                                           std::nullopt, std::nullopt, std::nullopt},
                     std::nullopt};
  watch_marks();
}

void GoodputSpans::round_ends() {
  if (attempt_ && !attempt_->ended) attempt_->ended = wall_();
}

void GoodputSpans::end_attempt(const std::optional<rendezvous::RoundEnd>& over) {
  marks_watch_->cancel();
  tell_marks();
  update(over);
}

std::optional<tracking::TimeSplit> GoodputSpans::split(
    const std::optional<rendezvous::RoundEnd>& over) {
  update(over);
  std::vector<tracking::AttemptSpan> current;
  if (attempt_) current.push_back(attempt_->span);
  tracking::Goodput g =
      tracking::account_goodput(settled_until_, wall_(), current, {.from_launch = !settled_any_});
  if (!steps_seen_ && !g.steps_seen) return std::nullopt;
  tracking::TimeSplit s = settled_;
  return s += g.job;
}

void GoodputSpans::watch_marks() {
  if (!observer_) return;
  marks_watch_->start(kMarksEvery, [this] {
    tell_marks();
    watch_marks();
  });
}

// The run's "steps" event: each rank's marks, and the newest checkpoint file.
void GoodputSpans::tell_marks() {
  if (!observer_ || !attempt_) return;
  nlohmann::json ranks = nlohmann::json::array();
  for (int i = 0; i < local_world_size_; ++i) {
    ProgressSample s = workers_.progress(i);
    const StepMarks& m = s.marks;
    if (m.first_step_us == 0 && m.checkpoint_us == 0) continue;
    nlohmann::json r{{"rank", attempt_->first_rank + i},
                     {"steps", s.timed.steps},
                     {"first_us", m.first_step_us},
                     {"last_us", m.last_step_us},
                     {"checkpoint_us", m.checkpoint_us}};
    if (m.checkpoint_step) r["checkpoint_step"] = *m.checkpoint_step;
    ranks.push_back(std::move(r));
  }
  nlohmann::json d{{"ranks", ranks}};
  std::optional<int64_t> saved;
  if (!checkpoint_dir_.empty()) saved = newest_checkpoint_us(checkpoint_dir_);
  if (saved) d["checkpoint_dir_us"] = *saved;
  if (ranks.empty() && !saved) return;
  observer_->steps_marked(attempt_->group_rank, attempt_->restart_count, d.dump());
}

// The running round's span as this node sees it now: how it ended, and its ranks' marks.
void GoodputSpans::update(const std::optional<rendezvous::RoundEnd>& over) {
  if (!attempt_) return;
  tracking::AttemptSpan& now = attempt_->span;
  now.hang = over && over->hang;
  bool ended_well = over && over->kind == rendezvous::RoundEnd::Kind::kFinal && over->exitcode == 0;
  if (attempt_->ended && !ended_well) now.failed = attempt_->ended;
  if (!checkpoint_dir_.empty()) {
    if (auto saved = newest_checkpoint_us(checkpoint_dir_))
      keep(now.checkpoint, seconds(*saved), false);
  }
  for (int i = 0; i < local_world_size_; ++i) {
    const StepMarks& m = workers_.progress(i).marks;
    if (m.first_step_us > 0) keep(now.first_step, seconds(m.first_step_us), true);
    if (m.last_step_us > 0) keep(now.last_step, seconds(m.last_step_us), false);
    if (m.checkpoint_us > 0) keep(now.checkpoint, seconds(m.checkpoint_us), false);
  }
}

void GoodputSpans::settle_last_round() {
  if (!attempt_) return;
  double now = wall_();
  double end = std::min(attempt_->span.failed.value_or(now), now);
  tracking::Goodput g = tracking::account_goodput(settled_until_, end, {attempt_->span},
                                                  {.from_launch = !settled_any_});
  settled_ += g.job;
  settled_until_ = std::max(settled_until_, end);
  settled_any_ = true;
  steps_seen_ = steps_seen_ || g.steps_seen;
  attempt_.reset();
}

}  // namespace ddprun::agent
