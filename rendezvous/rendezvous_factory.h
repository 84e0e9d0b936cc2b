#pragma once

#include <memory>

#include "common/cancel_signal.h"
#include "common/coro.h"
#include "rendezvous/rendezvous_handler.h"
#include "rendezvous/rendezvous_params.h"

namespace ddprun::rendezvous {

/// The rendezvous the parameters ask for: elastic (over c10d's hosted store or etcd)
/// where nodes may come and go, static otherwise (one node included), made from a
/// coroutine on the agent's loop. Hosts or connects as it is made: a store that is not
/// up yet is waited for (with retries) as the loop's completions, and `cancel` ends
/// that wait at once (Error); the few requests after the first connection are quick.
/// Throws StoreError / TimeoutError naming the address.
Task<std::unique_ptr<RendezvousHandler>> open_rendezvous(RendezvousParams p, CancelSignal& cancel);

/// Where nodes can be kept out (elastic jobs), tells the other nodes why this one stays
/// out before it ever joined (its preflight failed): it reaches their store as a client
/// only, waiting for it at most kUnfitWait (it never hosts: a host that leaves would
/// take the store with it), and quarantines its address with `reason`, so that their
/// consoles, their rounds and the run say why it is out. Throws Error naming why the
/// others could not be told (this node was to host their store, the store did not
/// answer); Error once `cancel` is.
Task<void> tell_unfit(RendezvousParams p, std::string reason, CancelSignal& cancel);
inline constexpr std::chrono::seconds kUnfitWait{30};

}  // namespace ddprun::rendezvous
