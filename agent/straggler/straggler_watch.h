#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/agent_config.h"
#include "agent/straggler/straggler_judge.h"
#include "agent/worker_progress.h"
#include "common/clock.h"
#include "rendezvous/rendezvous_handler.h"
#include "rendezvous/round/round_coordinator.h"
#include "tracking/run_observer.h"

namespace ddprun::agent {

/// Straggler detection for one attempt (--straggler_threshold): every window, each
/// node publishes what its ranks did (steps, and of their time the ranks' own work),
/// group rank 0 judges the whole job from every node's part and names who slows it,
/// and every node reads the job's median back for its metrics. Two quick store
/// requests per node and window (group rank 0: one more, of one key per node).
/// Made as the attempt's workers start, destroyed with the attempt.
///
/// Thread-safety: the loop's thread only. `observer` may be null.
class StragglerWatch {
 public:
  /// --straggler_action=exclude, group rank 0: asks the agent to leave the worst
  /// straggler's node (member id `member`) out of the job; the agent calls refuse()
  /// where the job could not go on without it.
  using Exclude =
      std::function<void(const StragglerJudge::Score& worst, const std::string& member)>;
  // How often group rank 0 records every rank's scores in the run, besides whenever it
  // names someone: the dashboard's rank x time view, at a size that stays small.
  static constexpr std::chrono::seconds kScoresEvery{60};

  StragglerWatch(const AgentConfig& config, const rendezvous::RendezvousInfo& info,
                 std::string host, rendezvous::RoundCoordinator& round,
                 const WorkerProgress& workers, Clock& clock, tracking::RunObserver* observer,
                 Exclude exclude);

  /// The attempt's workers are gone: no window after this (what was learned stays).
  void stop() { window_->cancel(); }
  /// Seconds of `local_rank`'s own work per step in the last window it stepped (none
  /// before), and its score against the job's median once that is known: /metrics.
  std::optional<double> own_per_step(int local_rank) const;
  std::optional<double> score(int local_rank) const;
  /// The straggler's node stays in the job (`why`): said once an attempt.
  void refuse(int node, const std::string& host, const std::string& why);

 private:
  void start_window();
  void judge_window();
  void say(const StragglerJudge::Verdict& v);
  void exclude_worst(const StragglerJudge::Verdict& v);

  const AgentConfig& config_;
  const rendezvous::RendezvousInfo info_;
  const std::string host_;
  rendezvous::RoundCoordinator& round_;
  const WorkerProgress& workers_;
  Clock& clock_;
  tracking::RunObserver* observer_;
  Exclude exclude_;
  std::unique_ptr<Timer> window_;
  StepWindows windows_;
  StragglerJudge judge_;
  std::vector<std::optional<double>> own_per_step_;       // by local rank, seconds
  double job_median_ = 0;                                 // 0: not known yet
  std::optional<std::chrono::milliseconds> last_scores_;  // when the run last got every score
  bool refused_ = false;                                  // an exclusion was refused (said once)
};

}  // namespace ddprun::agent
