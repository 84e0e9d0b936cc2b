#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "rendezvous/round/round_coordinator.h"

namespace ddprun::agent {

/// The hot spares waiting while one attempt runs, as this node last heard of them: the
/// round's at first; with watch() (the primary, for the job's run; group rank 0, for
/// the metrics discovery file), one quick read of the rendezvous state a second, and
/// each change told (a spare that arrives now is in no round yet). Made as the round
/// forms, destroyed with the attempt.
///
/// Thread-safety: the loop's thread only.
class SpareWatch {
 public:
  static constexpr std::chrono::seconds kEvery{1};

  SpareWatch(std::vector<std::string> spares, int attempt, rendezvous::RoundCoordinator& round,
             Clock& clock);

  /// The spares waiting now, by node id, and the attempt.
  using OnChange = std::function<void(const std::vector<std::string>& spares, int attempt)>;

  /// Reads the spares every kEvery until stop(), telling `on_change` of each change.
  void watch(OnChange on_change);
  void stop() { every_->cancel(); }
  const std::vector<std::string>& waiting() const { return spares_; }

 private:
  void look();

  std::vector<std::string> spares_;
  const int attempt_;
  rendezvous::RoundCoordinator& round_;
  std::unique_ptr<Timer> every_;
  OnChange on_change_;
};

}  // namespace ddprun::agent
