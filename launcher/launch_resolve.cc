#include "launcher/launch_resolve.h"

#include <spdlog/spdlog.h>

#include "agent/device_count.h"
#include "agent/numa_binding.h"
#include "common/random_id.h"
#include "launcher/entrypoint.h"
#include "launcher/python_files.h"
#include "launcher/slurm_token.h"
#include "os/cpu_topology.h"

namespace ddprun::launcher {
namespace {

// --numa_binding: this machine's topology read once, each local rank's CPUs planned.
void bind_workers_to_cpus(agent::AgentConfig& a, const EnvLookup& env) {
  os::CpuTopology topology = os::read_cpu_topology("/", os::allowed_cpus());
  auto visible = env("CUDA_VISIBLE_DEVICES");
  std::vector<int> gpu_nodes = agent::visible_gpu_nodes("/", visible ? visible->c_str() : nullptr);
  a.cpu_bindings =
      agent::plan_numa_binding(topology, a.numa_mode, a.spec.local_world_size, gpu_nodes);
  for (size_t i = 0; i < a.cpu_bindings.size(); ++i) {
    spdlog::info("--numa_binding={}: local_rank {}: {}", agent::numa_mode_name(a.numa_mode), i,
                 a.cpu_bindings[i].describe());
  }
}

}  // namespace

void resolve_launch(LaunchConfig& config, const EnvLookup& env, std::vector<std::string>& notices) {
  resolve_entrypoint(config, env);
  // Before the tracker, which needs the token too. No signal handler yet: a stop
  // signal while this node waits for the first one ends it at once.
  settle_slurm_token(config.rendezvous, munge_loader(env), notices);
  if (config.standalone) config.agent.run_id = config.rendezvous.run_id = random_uuid();
  if (config.agent.numa_mode != agent::NumaMode::kOff) bind_workers_to_cpus(config.agent, env);
  // torchrun's worker watchdog: asked for by the environment, as torchrun is.
  if (env("TORCHELASTIC_ENABLE_FILE_TIMER") == "1") {
    config.agent.timer_file = env("TORCHELASTIC_TIMER_FILE").value_or("");
    if (config.agent.timer_file.empty()) {
      config.agent.timer_file = "/tmp/watchdog_timer_" + random_uuid();
    }
  }
  // Python workers import ddprun_tracking and start with ddprun's hook; a program's
  // workers have it too where their stacks are taken (it may be an interpreter).
  bool stacks = config.agent.hang.enabled() || !config.agent.timer_file.empty();
  bool python_workers = config.kind != ScriptKind::kExecutable;
  PythonDirs python;
  if (config.tracking || stacks || python_workers) python = python_dirs();
  if (stacks || python_workers) config.agent.python_hook_dir = python.hook;
  if (config.tracking || python_workers) config.agent.python_client_dir = python.tracking;
}

}  // namespace ddprun::launcher
