#pragma once

#include <optional>
#include <string>

#include "common/cancel_signal.h"
#include "common/coro.h"
#include "rendezvous/rendezvous_handler.h"
#include "tracking/run_observer.h"

namespace ddprun::agent {

/// The job's one experiment-tracking run across nodes, for the job: the primary
/// agent's run takes the other agents' records. Where it listens is shared through the
/// rendezvous store, on the loop: the primary publishes it before it joins a round, and
/// every other node reads it once, at its first round. Tracking itself knows no store;
/// tracking never stops training (a failure here is logged, and the others' records
/// stay on their nodes).
///
/// Thread-safety: the loop's thread only. Both waits end with `cancel` (which they
/// rethrow); nothing else is thrown.
class SharedRun {
 public:
  SharedRun(tracking::RunObserver& observer, std::string run_id)
      : observer_(observer), run_id_(std::move(run_id)) {}

  /// Attaches the run to the rendezvous; the primary publishes where it listens.
  Task<void> publish(rendezvous::RendezvousHandler& handler, CancelSignal& cancel);
  /// The primary's run, as it published it ("" for the primary, or where none was):
  /// read once.
  Task<std::string> primary(rendezvous::RendezvousHandler& handler, CancelSignal& cancel);

 private:
  tracking::RunObserver& observer_;
  const std::string run_id_;
  std::optional<std::string> primary_;  // once read
};

}  // namespace ddprun::agent
