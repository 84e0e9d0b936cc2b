#include "launcher/slurm_step.h"

#include <charconv>

#include "common/error.h"
#include "common/host_list.h"

namespace ddprun::launcher {
namespace {

// The first of `names` that is set, with its name.
std::optional<std::pair<std::string, std::string>> first_set(
    const EnvLookup& env, std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (auto value = env(name); value && !value->empty()) return std::pair{*value, name};
  return std::nullopt;
}

int read_count(const std::string& var, const std::string& value) {
  int n = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || end != value.data() + value.size() || n < 0) {
    throw UsageError(var + "=" + value +
                     ": expected a non-negative integer (is this Slurm's "
                     "environment?)");
  }
  return n;
}

}  // namespace

std::optional<SlurmStep> read_slurm_step(const EnvLookup& env) {
  auto job = first_set(env, {"SLURM_JOB_ID", "SLURM_JOBID"});
  if (!job) return std::nullopt;
  SlurmStep s;
  s.job_id = job->first;
  read_count(job->second, s.job_id);
  // The batch step's environment has no step id; "batch"/"extern" are not a step of ours.
  if (auto step = first_set(env, {"SLURM_STEP_ID", "SLURM_STEPID"})) {
    int id = 0;
    auto [end, ec] =
        std::from_chars(step->first.data(), step->first.data() + step->first.size(), id);
    if (ec == std::errc() && end == step->first.data() + step->first.size() && id >= 0 &&
        id < 0x7ffffff0) {
      s.step_id = id;
    }
  }
  std::optional<std::pair<std::string, std::string>> nodes, list, tasks;
  if (s.step_id) {
    nodes = first_set(env, {"SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES"});
    list = first_set(env, {"SLURM_STEP_NODELIST", "SLURM_NODELIST", "SLURM_JOB_NODELIST"});
    tasks = first_set(env, {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"});
  } else {
    nodes = first_set(env, {"SLURM_JOB_NUM_NODES", "SLURM_NNODES"});
    list = first_set(env, {"SLURM_JOB_NODELIST", "SLURM_NODELIST"});
  }
  if (nodes) {
    s.nodes = read_count(nodes->second, nodes->first);
    s.nodes_source = nodes->second;
  }
  if (list) {
    s.node_names = expand_host_list(list->second, list->first);
    if (!nodes) {
      s.nodes = static_cast<int>(s.node_names.size());
      s.nodes_source = list->second;
    }
    if (s.node_names.size() != static_cast<size_t>(s.nodes)) {
      throw UsageError(list->second + "=" + list->first + " names " +
                       std::to_string(s.node_names.size()) + " nodes but " + s.nodes_source + "=" +
                       std::to_string(s.nodes));
    }
  }
  if (s.nodes < 1) throw UsageError(s.nodes_source + "=0: a Slurm job has at least one node");
  if (auto id = first_set(env, {"SLURM_NODEID"}); id && s.step_id) {
    s.node_id = read_count("SLURM_NODEID", id->first);
    if (s.node_id >= s.nodes) {
      throw UsageError("SLURM_NODEID=" + id->first + " is not below " + s.nodes_source + "=" +
                       std::to_string(s.nodes));
    }
  }
  s.tasks = s.nodes;
  if (tasks) {
    s.tasks = read_count(tasks->second, tasks->first);
    s.tasks_source = tasks->second;
  }
  s.node_name = env("SLURMD_NODENAME").value_or("");
  return s;
}

int slurm_port(const SlurmStep& step, bool elastic) {
  long long job = std::stoll(step.job_id);
  long long slot = job * 8 + (elastic ? 0 : step.step_id.value_or(0) % 8);
  return 20000 + static_cast<int>(slot % 12000);
}

}  // namespace ddprun::launcher
