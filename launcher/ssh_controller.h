#pragma once

#include "launcher/ssh_job.h"

namespace ddprun::launcher {

/// Fills in what the job needs from this machine: the exported environment (this
/// process' environment, ./.ddprun_env, --export), the working directory, this binary's
/// path as the remote ddprun, the first host's address (`ssh -G`), a port and a run id
/// where the user gave none. Throws UsageError for a bad entry.
void prepare_ssh_job(SshJob& job);

/// Starts one agent per host over ssh, in parallel, and relays their output to this
/// terminal in whole lines. The job ends when every agent has; the result is the root
/// cause's exit status (node 0's when it failed, else the first failed node's), 255
/// when a host could not be reached (named with ssh's error; the others are stopped).
/// SIGINT/SIGTERM/SIGHUP/SIGQUIT close every agent's standard input, which stops its
/// workers within the grace period; a second signal kills the ssh connections. Each
/// ssh dies with this process, and the agents then stop on their own.
int run_ssh_job(const SshJob& job);

}  // namespace ddprun::launcher
