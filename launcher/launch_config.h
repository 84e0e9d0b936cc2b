#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/agent_config.h"
#include "launcher/ssh_job.h"
#include "rendezvous/rendezvous_params.h"

namespace ddprun::launcher {

/// How the training script is turned into a command line.
enum class ScriptKind { kPythonFile, kPythonModule, kExecutable };

/// The validated command line. Plain data produced by parse_command_line().
struct LaunchConfig {
  agent::AgentConfig agent;  // spec.argv is filled by resolve_entrypoint()
  rendezvous::RendezvousParams rendezvous;
  bool standalone = false;

  std::string script;
  std::vector<std::string> script_args;
  ScriptKind kind = ScriptKind::kPythonFile;

  std::string log_level = "warn";

  bool tracking = true;
  bool console_events = false;  // --event_log_handler=console
  std::string tracking_dir = "./ddprun-runs";
  std::string run_name;
  std::chrono::milliseconds tracking_interval{15'000};
  bool help = false;
  bool version = false;
  /// --print-completion SHELL: print that shell's completion script and exit.
  std::optional<std::string> print_completion;
  /// Lines for the user about values ddprun chose or was told against its environment
  /// (e.g. an explicit --nnodes that contradicts the Slurm step). main() prints each as a warning.
  std::vector<std::string> notices;
  /// Said after "cannot listen" when the store's port was chosen for the user.
  std::string port_hint;
  /// With --hostfile/--hosts: this ddprun is the controller that starts the agents.
  std::optional<SshJob> ssh;
};

/// Looks up an environment variable; injectable so tests need not touch the real one.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

/// Counts the machine's devices for --nproc_per_node cpu|gpu|auto.
struct DeviceCounter {
  std::function<int()> cpus;
  std::function<int()> gpus;
  std::function<int()> xpus;  // Intel GPUs; none when unset
};

}  // namespace ddprun::launcher
