#pragma once

#include <string>
#include <utility>
#include <vector>

#include "launcher/hostfile.h"

namespace ddprun::launcher {

/// A job that the ddprun you typed (the controller) starts on every host over ssh: one
/// agent per host, the rendezvous filled in (static, the first host as master).
struct SshJob {
  std::vector<HostSlots> hosts;
  std::vector<std::string> ssh_cmd{"ssh"};               // --ssh_cmd / DDPRUN_SSH, split at blanks
  std::string remote_ddprun;                             // --remote_ddprun, or this binary's path
  std::string cwd;                                       // the same on every host
  std::vector<std::string> exports;                      // --export VAR / VAR=value, as given
  std::vector<std::pair<std::string, std::string>> env;  // exported to the agents
  std::vector<std::string> agent_args;                   // the user's ddprun flags for every agent
  bool prefix_given = false;  // the user chose --log_line_prefix_template
  std::string nnodes;         // --nnodes MIN:MAX given: elastic (c10d); else static
  std::string master_addr;    // the first host's address
  int master_port = 0;
  std::string run_id;
  std::string token;  // the job token, sent on each agent's standard input
  int ssh_timeout_s = 30;
  int keepalive_s = 5;  // ssh keep-alives and the controller's lines to each agent
  std::vector<std::string> script_and_args;
};

/// `s` in single quotes for a POSIX shell: every byte but NUL survives.
std::string shell_quote(const std::string& s);

/// The shell command that runs node `node_rank`'s agent on its host.
std::string remote_command(const SshJob& job, size_t node_rank);

/// The argv of the ssh process that starts node `node_rank`'s agent.
std::vector<std::string> ssh_argv(const SshJob& job, size_t node_rank);

/// What the agents get: every variable of `environ` whose name starts with NCCL_,
/// PYTHON, CUDA_, OMP_, TORCH_, WANDB_ or PET_; then `.ddprun_env` lines (VAR=value,
/// `#` comments); then --export entries (VAR takes the controller's value, VAR=value
/// sets it). Later ones win. Throws UsageError naming a bad entry.
std::vector<std::pair<std::string, std::string>> exported_env(
    const std::vector<std::string>& environ_entries, const std::string& ddprun_env_text,
    const std::vector<std::string>& exports);

}  // namespace ddprun::launcher
