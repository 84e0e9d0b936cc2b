#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "rendezvous/round_coordinator.h"
#include "tracking/run_observer.h"

namespace ddprun::agent {

/// The hot spares waiting while one attempt runs, as this node last heard of them: the
/// round's at first; with watch() (the primary, for the job's run), one quick read of
/// the rendezvous state a second, and the run told of each change (a spare that
/// arrives now is in no round yet). Made as the round forms, destroyed with the attempt.
///
/// Thread-safety: the loop's thread only.
class SpareWatch {
 public:
  static constexpr std::chrono::seconds kEvery{1};

  SpareWatch(std::vector<std::string> spares, int attempt, rendezvous::RoundCoordinator& round,
             Clock& clock);

  /// Reads the spares every kEvery until stop(), telling `observer` of each change.
  void watch(tracking::RunObserver& observer);
  void stop() { every_->cancel(); }
  const std::vector<std::string>& waiting() const { return spares_; }

 private:
  void look(tracking::RunObserver& observer);

  std::vector<std::string> spares_;
  const int attempt_;
  rendezvous::RoundCoordinator& round_;
  std::unique_ptr<Timer> every_;
};

}  // namespace ddprun::agent
