#pragma once

#include <map>
#include <string>
#include <vector>

#include "agent/agent_config.h"
#include "agent/worker.h"

namespace ddprun::agent {

/// The environment of one worker: `inherited` (KEY=VALUE entries, usually the agent's
/// own) with torchrun's variables set on top, in torchrun's names and formats.
/// `extra` (tracking's variables, ...) is set on top of everything.
std::vector<std::string> build_worker_env(const std::vector<std::string>& inherited,
                                          const AgentConfig& config, const WorkerGroup& group,
                                          const Worker& worker,
                                          const std::map<std::string, std::string>& extra = {});

/// The worker's command line: spec.argv with "${local_rank}" replaced.
std::vector<std::string> build_worker_argv(const WorkerSpec& spec, int local_rank);

/// torchrun's banner for the OMP_NUM_THREADS the workers get where the user set none,
/// said once as the first workers start (after the node's preflight).
std::string omp_banner(const std::string& threads);

/// The current process's environment as KEY=VALUE entries.
std::vector<std::string> current_environment();

}  // namespace ddprun::agent
