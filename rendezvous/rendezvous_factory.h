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

}  // namespace ddprun::rendezvous
