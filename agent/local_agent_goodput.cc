// Goodput accounting's part in the agent: when this node's ranks stepped and what they
// declared durable, read from their progress pages and told to the run (a "steps"
// event) at each attempt's end and every kMarksEvery while it runs. The run does the
// accounting (tracking/goodput.h) when it is read.
#include <nlohmann/json.hpp>

#include "agent/local_agent_impl.h"

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
  int first = info.rank_offset(info.group_rank);
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
  if (ranks.empty()) return;
  observer_->steps_marked(info.group_rank, info.restart_count, nlohmann::json{{"ranks", ranks}}.dump());
}

}  // namespace ddprun::agent
