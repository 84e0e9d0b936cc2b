#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "agent/worker_progress.h"
#include "common/clock.h"
#include "rendezvous/rendezvous_handler.h"
#include "rendezvous/round/round_end.h"
#include "tracking/goodput.h"
#include "tracking/run_observer.h"

namespace ddprun::agent {

/// Goodput accounting's part in the agent, for the job: when this node's ranks stepped
/// and what they declared durable, read from their progress pages (and the newest file
/// of --checkpoint_dir). The run is told (a "steps" event) at each attempt's end and
/// every kMarksEvery while it runs, and does the job's accounting from every node's
/// (tracking/goodput.h). split() is this node's own view, for /metrics: the rounds
/// settled as each ended, and the running one's span.
///
/// Thread-safety: the loop's thread only. `observer` may be null (no run: nothing told).
class GoodputSpans {
 public:
  /// Seconds since the epoch, now (tests give their own).
  using WallClock = std::function<double()>;
  static constexpr std::chrono::seconds kMarksEvery{30};

  GoodputSpans(int local_world_size, std::string checkpoint_dir, const WorkerProgress& workers,
               Clock& clock, tracking::RunObserver* observer, WallClock wall);

  /// An attempt's workers start: the last round is settled, up to its failure (the time
  /// from there to this one's first step is this round's restart).
  void begin_attempt(const rendezvous::RendezvousInfo& info);
  /// This node learned that its round ends (the end of the attempt's useful work): the
  /// first call of the attempt counts.
  void round_ends();
  /// The attempt's workers are gone: the run is told their marks.
  void end_attempt(const std::optional<rendezvous::RoundEnd>& over);
  /// This node's accounting from its launch to now, over the rounds it ran; none before
  /// some round timed a step.
  std::optional<tracking::TimeSplit> split(const std::optional<rendezvous::RoundEnd>& over);

 private:
  struct Attempt {
    int restart_count = 0;
    int group_rank = 0;
    int first_rank = 0;
    tracking::AttemptSpan span;
    std::optional<double> ended;  // when this node learned its round ends (wall, s)
  };

  void watch_marks();
  void tell_marks();
  void update(const std::optional<rendezvous::RoundEnd>& over);
  void settle_last_round();

  const int local_world_size_;
  const std::string checkpoint_dir_;
  const WorkerProgress& workers_;
  tracking::RunObserver* observer_;
  WallClock wall_;
  std::unique_ptr<Timer> marks_watch_;
  // The rounds that ended, up to `settled_until_` (the launch at first).
  double settled_until_;
  tracking::TimeSplit settled_;
  bool settled_any_ = false;        // some round was settled: the next one's wait is a restart
  bool steps_seen_ = false;         // some settled round timed a step
  std::optional<Attempt> attempt_;  // the running round's, until the next begins
};

}  // namespace ddprun::agent
