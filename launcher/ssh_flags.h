#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/launch_config.h"
#include "launcher/option_values.h"
#include "launcher/ssh_job.h"

namespace ddprun::launcher {

/// One option of the command line as the user gave it, in canonical spelling.
struct OptionTokens {
  std::string name;                 // "nproc_per_node"
  std::vector<std::string> tokens;  // {"--nproc_per_node=2"} or {"--nproc_per_node", "2"}
};

/// With --hostfile or --hosts: the job the controller starts over ssh. The agents get
/// the user's flags minus the controller's own and the rendezvous ones it sets (given
/// by the user, --nnodes, --node_rank, --rdzv_backend, --rdzv_endpoint and
/// --standalone are a usage error). nullopt without either flag. `exports` are the
/// --export values; the environment itself is read when the job starts.
std::optional<SshJob> read_ssh_job(const Values& v, const EnvLookup& env,
                                   const std::vector<OptionTokens>& options,
                                   const std::vector<std::string>& exports,
                                   const std::vector<std::string>& script_and_args);

}  // namespace ddprun::launcher
