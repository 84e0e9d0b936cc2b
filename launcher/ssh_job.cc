#include "launcher/ssh_job.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "common/error.h"
#include "common/value_parsers.h"

namespace ddprun::launcher {
namespace {

constexpr const char* kExportedPrefixes[] = {"NCCL_",  "PYTHON", "CUDA_", "OMP_",
                                             "TORCH_", "WANDB_", "PET_"};

bool valid_name(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

[[noreturn]] void not_set_here(const std::string& entry, const std::string& name) {
  throw UsageError("--export " + entry + ": " + name + " is not set here");
}

}  // namespace

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string remote_command(const SshJob& job, size_t node_rank) {
  const HostSlots& host = job.hosts.at(node_rank);
  std::vector<std::string> argv{"env"};
  for (const auto& [name, value] : job.env) {
    std::string entry = name;
    entry += '=';
    entry += value;
    argv.push_back(std::move(entry));
  }
  if (!host.picked.empty()) {
    std::string devices;
    for (int s : host.picked) {
      if (!devices.empty()) devices += ',';
      devices += std::to_string(s);
    }
    argv.push_back("CUDA_VISIBLE_DEVICES=" + devices);
  }
  argv.push_back(job.remote_ddprun);
  argv.insert(argv.end(), job.agent_args.begin(), job.agent_args.end());
  if (job.nnodes.empty()) {
    argv.push_back("--nnodes=" + std::to_string(job.hosts.size()));
    argv.push_back("--node_rank=" + std::to_string(node_rank));
    argv.push_back("--master_addr=" + job.master_addr);
    argv.push_back("--master_port=" + std::to_string(job.master_port));
    // The job token arrives as the first line of the agent's standard input.
    argv.emplace_back("--rdzv_conf=token_file=-");
  } else {  // elastic: the first host's agent hosts the c10d store
    argv.push_back("--nnodes=" + job.nnodes);
    argv.emplace_back("--rdzv_backend=c10d");
    argv.push_back("--rdzv_endpoint=" + job.master_addr + ":" + std::to_string(job.master_port));
    argv.push_back(std::string("--rdzv_conf=token_file=-,is_host=") + (node_rank == 0 ? "1" : "0"));
  }
  argv.push_back("--rdzv_id=" + job.run_id);
  argv.emplace_back("--stop_on_stdin_close");
  argv.push_back("--stdin_timeout=" + std::to_string(3 * job.keepalive_s));
  int nproc = !host.picked.empty() ? static_cast<int>(host.picked.size()) : host.slots;
  if (nproc > 0) argv.push_back("--nproc_per_node=" + std::to_string(nproc));
  if (!job.prefix_given) argv.push_back("--log_line_prefix_template=[" + host.name + ":${rank}]:");
  argv.emplace_back("--");
  argv.insert(argv.end(), job.script_and_args.begin(), job.script_and_args.end());
  std::string command = "cd " + shell_quote(job.cwd) + " && exec";
  for (const auto& a : argv) {
    command += ' ';
    command += shell_quote(a);
  }
  return command;
}

std::vector<std::string> ssh_argv(const SshJob& job, size_t node_rank) {
  std::vector<std::string> argv = job.ssh_cmd;
  // No tty, never a prompt; a dead connection noticed after 3 keep-alives without an
  // answer (ssh then exits 255).
  for (const char* opt : {"-T", "-o", "BatchMode=yes", "-o", "ServerAliveCountMax=3", "-o"}) {
    argv.emplace_back(opt);
  }
  argv.push_back("ServerAliveInterval=" + std::to_string(job.keepalive_s));
  argv.emplace_back("-o");
  argv.push_back("ConnectTimeout=" + std::to_string(job.ssh_timeout_s));
  argv.push_back(job.hosts.at(node_rank).name);
  argv.push_back(remote_command(job, node_rank));
  return argv;
}

std::vector<std::pair<std::string, std::string>> exported_env(
    const std::vector<std::string>& environ_entries, const std::string& ddprun_env_text,
    const std::vector<std::string>& exports) {
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> controller;
  for (const auto& entry : environ_entries) {
    size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    std::string name = entry.substr(0, eq);
    controller[name] = entry.substr(eq + 1);
    for (const char* prefix : kExportedPrefixes) {
      if (name.rfind(prefix, 0) == 0) env[name] = entry.substr(eq + 1);
    }
  }
  auto lines = split_text(ddprun_env_text, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string line = trim_text(lines[i]);
    if (line.empty() || line[0] == '#') continue;
    size_t eq = line.find('=');
    std::string name = line.substr(0, eq);
    if (eq == std::string::npos || !valid_name(name)) {
      throw UsageError(".ddprun_env:" + std::to_string(i + 1) + ": expected VAR=value, not '" +
                       line + "'");
    }
    env[name] = line.substr(eq + 1);
  }
  for (const auto& e : exports) {
    size_t eq = e.find('=');
    std::string name = e.substr(0, eq);
    if (!valid_name(name)) throw UsageError("--export " + e + ": expected VAR or VAR=value");
    if (eq != std::string::npos) {
      env[name] = e.substr(eq + 1);
    } else if (auto it = controller.find(name); it != controller.end()) {
      env[name] = it->second;
    } else {
      not_set_here(e, name);
    }
  }
  return {env.begin(), env.end()};
}

}  // namespace ddprun::launcher
