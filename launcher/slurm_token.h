#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "launcher/launch_config.h"
#include "net/credentials.h"
#include "rendezvous/rendezvous_params.h"

namespace ddprun::launcher {

/// The cluster's credential service, or null with `why` (os::Munge in the product).
using CredentialsLoader = std::function<std::shared_ptr<net::Credentials>(std::string* why)>;

/// A Slurm step's job token where nobody gave one (`token_by_munge`): MUNGE, which
/// Slurm itself authenticates with, lets its nodes agree on one without a secret of
/// the user's. The node hosting the job's store (node 0's, or the c10d endpoint's)
/// makes a fresh token and hands it out (net/token_handout.h); every other node asks
/// it for the token before its rendezvous, waiting for it as long as a join may take.
/// Where MUNGE is missing or does not answer on the host, the job runs without a token
/// and `notices` says so, as it does for a host that hands none out. Throws StoreError
/// or Error (naming the first node and why) when the host refuses this node or MUNGE
/// fails here while the host uses it.
void settle_slurm_token(rendezvous::RendezvousParams& params, const CredentialsLoader& load,
                        std::vector<std::string>& notices);

/// The product's loader: MUNGE at the socket the Slurm configuration names
/// (SLURM_CONF, else /etc/slurm/slurm.conf), else MUNGE's default.
CredentialsLoader munge_loader(EnvLookup env);

}  // namespace ddprun::launcher
