#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/launch_config.h"

namespace ddprun::launcher {

/// What Slurm's environment says about the place this ddprun runs in: a job step
/// (`srun`), or the batch script / `salloc` shell of an allocation (no step).
struct SlurmStep {
  std::string job_id;                   // SLURM_JOB_ID
  std::optional<int> step_id;           // SLURM_STEP_ID; none outside a step
  int nodes = 1;                        // the step's nodes (the allocation's outside a step)
  int node_id = 0;                      // this node's index among them (SLURM_NODEID)
  int tasks = 1;                        // the step's tasks (SLURM_STEP_NUM_TASKS)
  std::vector<std::string> node_names;  // the expanded node list, in node id order
  std::string node_name;                // SLURMD_NODENAME, when set
  std::string nodes_source;             // the variable `nodes` came from, for messages
  std::string tasks_source;
};

/// Reads the step from the environment; nullopt outside Slurm (no SLURM_JOB_ID).
/// Throws UsageError naming the variable for a malformed or inconsistent value.
std::optional<SlurmStep> read_slurm_step(const EnvLookup& env);

/// The port the job's store listens on, derived from the job id so that every node
/// computes the same one: 20000 + (job_id * 8 + step_id mod 8) mod 12000, in
/// 20000-31999 (below Linux's ephemeral ports). An elastic job leaves the step out
/// (steps of one job join one rendezvous); a static one keeps it, so that up to 8
/// concurrent steps of a job do not collide. --master_port / --rdzv_endpoint override it.
int slurm_port(const SlurmStep& step, bool elastic);

}  // namespace ddprun::launcher
