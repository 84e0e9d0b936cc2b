#pragma once

#include <vector>

#include "agent/worker_progress.h"

namespace ddprun::testing {

/// Workers whose progress pages a test writes: `pages[local_rank]`.
class FakeWorkerProgress : public agent::WorkerProgress {
 public:
  explicit FakeWorkerProgress(int local_world_size)
      : pages(static_cast<size_t>(local_world_size)) {}

  bool running() const override { return is_running; }
  agent::ProgressSample progress(int local_rank) const override {
    return pages.at(static_cast<size_t>(local_rank));
  }

  bool is_running = true;
  std::vector<agent::ProgressSample> pages;
};

}  // namespace ddprun::testing
