#include "agent/restart_progress.h"

namespace ddprun::agent {

int RestartProgress::failed(int attempt, std::optional<int64_t> furthest, uint64_t steps_timed) {
  bool judged = seen_steps_;
  bool progressed = furthest ? (!best_ || *furthest > *best_) : (!best_ && steps_timed > 0);
  if (furthest && (!best_ || *furthest > *best_)) best_ = furthest;
  seen_steps_ = seen_steps_ || furthest || steps_timed > 0;
  in_a_row_ = judged && attempt > 0 && !progressed ? in_a_row_ + 1 : 0;
  return in_a_row_;
}

std::string RestartProgress::why() const {
  if (best_) return "got no rank past step " + std::to_string(*best_);
  return "timed no step";
}

}  // namespace ddprun::agent
