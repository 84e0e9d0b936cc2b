#pragma once

#include <memory>

#include "rendezvous/rendezvous_handler.h"
#include "rendezvous/rendezvous_params.h"

namespace ddprun::rendezvous {

/// The rendezvous the parameters ask for: elastic (over c10d's hosted store or etcd)
/// where nodes may come and go, static otherwise (one node included). Connects or
/// hosts as it is built: throws StoreError / TimeoutError naming the address.
std::unique_ptr<RendezvousHandler> make_rendezvous(const RendezvousParams& p);

}  // namespace ddprun::rendezvous
