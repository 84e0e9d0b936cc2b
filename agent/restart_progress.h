#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ddprun::agent {

/// Whether restarts after failures get anywhere (--max_no_progress_restarts, for crash
/// loops as hang detection does for hangs). A failed attempt made progress when one of
/// this node's ranks logged a step past the furthest any earlier attempt reached or,
/// where no step number is logged, timed a step at all. Until the job has shown a step
/// there is nothing to judge by: a program that reports none is never stopped here.
/// Pure logic.
class RestartProgress {
 public:
  /// An attempt (its restart count) failed; its ranks' furthest logged step and the
  /// steps they timed. Returns the failed restarts in a row that got nowhere.
  int failed(int attempt, std::optional<int64_t> furthest, uint64_t steps_timed);
  /// Why the last ones got nowhere: "got no rank past step 120", "timed no step".
  std::string why() const;

 private:
  bool seen_steps_ = false;
  std::optional<int64_t> best_;
  int in_a_row_ = 0;
};

}  // namespace ddprun::agent
