#include "agent/worker_env.h"

#include <map>

extern char** environ;

namespace ddprun::agent {
namespace {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) {
    s.replace(pos, from.size(), to);
  }
  return s;
}

std::string key_of(const std::string& entry) { return entry.substr(0, entry.find('=')); }

}  // namespace

std::vector<std::string> current_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return env;
}

std::vector<std::string> build_worker_env(const std::vector<std::string>& inherited,
                                          const AgentConfig& config, const WorkerGroup& group,
                                          const Worker& worker,
                                          const std::map<std::string, std::string>& extra) {
  std::map<std::string, std::string> set;
  std::map<std::string, std::string> parent;
  for (const auto& entry : inherited) {
    size_t eq = entry.find('=');
    if (eq != std::string::npos) parent[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  auto inherited_or = [&](const std::string& key, const std::string& fallback) {
    auto it = parent.find(key);
    return it == parent.end() ? fallback : it->second;
  };
  const WorkerSpec& spec = config.spec;
  set["LOCAL_RANK"] = std::to_string(worker.local_rank);
  auto own_device = static_cast<size_t>(worker.local_rank);
  if (spec.virtual_local_rank && own_device < spec.virtual_devices.size()) {
    set["LOCAL_RANK"] = "0";
    set["CUDA_VISIBLE_DEVICES"] = spec.virtual_devices[own_device];
  }
  set["RANK"] = std::to_string(worker.global_rank);
  set["GROUP_RANK"] = std::to_string(group.group_rank);
  set["ROLE_RANK"] = std::to_string(worker.role_rank);
  set["ROLE_NAME"] = spec.role;
  set["LOCAL_WORLD_SIZE"] = std::to_string(spec.local_world_size);
  set["WORLD_SIZE"] = std::to_string(worker.world_size);
  set["GROUP_WORLD_SIZE"] = std::to_string(group.group_world_size);
  set["ROLE_WORLD_SIZE"] = std::to_string(worker.role_world_size);
  set["MASTER_ADDR"] = group.master_addr;
  set["MASTER_PORT"] = std::to_string(group.master_port);
  set["TORCHELASTIC_RESTART_COUNT"] = std::to_string(group.restart_count);
  set["TORCHELASTIC_MAX_RESTARTS"] = std::to_string(spec.max_restarts);
  set["TORCHELASTIC_RUN_ID"] = config.run_id;
  set["TORCHELASTIC_USE_AGENT_STORE"] = group.use_agent_store ? "True" : "False";
  set["TORCHELASTIC_ERROR_FILE"] = worker.error_file;
  set["TORCHELASTIC_SIGNALS_TO_HANDLE"] = config.signals_to_handle;
  // torchrun 2.x's name only (2.x warns about the old one): ddprun's Python start-up
  // hook gives a torch 1.x worker the old one.
  set["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = inherited_or("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1");
  if (!config.omp_num_threads.empty() && !parent.count("OMP_NUM_THREADS")) {
    set["OMP_NUM_THREADS"] = config.omp_num_threads;
  }

  for (const auto& [k, v] : extra) set[k] = v;

  std::vector<std::string> env;
  env.reserve(inherited.size() + set.size());
  for (const auto& entry : inherited) {
    if (!set.count(key_of(entry))) env.push_back(entry);
  }
  for (const auto& [k, v] : set) {
    std::string entry = k;
    entry += '=';
    entry += v;
    env.push_back(std::move(entry));
  }
  return env;
}

std::vector<std::string> build_worker_argv(const WorkerSpec& spec, int local_rank) {
  std::vector<std::string> argv;
  argv.reserve(spec.argv.size());
  for (const auto& arg : spec.argv) {
    argv.push_back(replace_all(arg, "${local_rank}", std::to_string(local_rank)));
  }
  return argv;
}

std::string omp_banner(const std::string& threads) {
  return "*****************************************\n"
         "ddprun: OMP_NUM_THREADS is not set; each worker gets OMP_NUM_THREADS=" +
         threads +
         " so that the workers do not oversubscribe the CPUs. Set it yourself to tune "
         "performance.\n"
         "*****************************************\n";
}

}  // namespace ddprun::agent
