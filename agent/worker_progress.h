#pragma once

#include "agent/hang/hang_monitor.h"

namespace ddprun::agent {

/// What the agent's components read of this node's workers: whether the attempt's
/// workers run, and each local rank's progress page now. WorkerGroupRunner is the real
/// one; tests/fakes/fake_worker_progress.h the fake.
///
/// Thread-safety: the loop's thread only.
class WorkerProgress {
 public:
  virtual ~WorkerProgress() = default;
  virtual bool running() const = 0;
  virtual ProgressSample progress(int local_rank) const = 0;
};

}  // namespace ddprun::agent
