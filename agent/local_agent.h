#pragma once

#include <memory>
#include <string>
#include <vector>

#include "agent/agent_config.h"
#include "agent/failure_summary.h"
#include "agent/worker.h"

namespace ddprun::agent {

class ProcessLauncher;
class OrphanGuard;
class RunObserver;

/// Runs one node's workers to the end of the job: spawns them with torchrun's
/// environment, supervises them in one Asio loop driven by SIGCHLD (never polling),
/// routes their output, stops the group on the first failure (SIGTERM, grace period,
/// SIGKILL), restarts it within the budget, forwards SIGINT/SIGTERM/SIGHUP/SIGQUIT,
/// and prints torchrun's failure summary.
///
/// Exit code of run(): 0 if every worker exited 0; the root-cause worker's code
/// (128+N for signal N) on failure; 128+S when ddprun received signal S.
/// Single-threaded: construct and run on one thread.
class LocalAgent {
 public:
  /// `launcher`, `guard` and `observer` must outlive the agent; `guard` and
  /// `observer` (the job's tracking run) may be null.
  LocalAgent(AgentConfig config, ProcessLauncher& launcher, OrphanGuard* guard,
             RunObserver* observer = nullptr);
  ~LocalAgent();

  int run();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ddprun::agent
