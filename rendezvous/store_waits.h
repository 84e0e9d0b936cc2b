#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/cancel_signal.h"
#include "common/coro.h"
#include "rendezvous/store.h"

namespace ddprun::rendezvous {

/// Until every one of `keys` exists in `store` (true) or `timeout` passes (false), from
/// a coroutine on a loop. On a TcpStoreClient the wait is the store's own WAIT request,
/// whose answer is a completion of the loop; the connection serves nothing else until
/// this returns. A store of this process (MemoryStore, in tests) is looked at every
/// few milliseconds.
/// `cancel` ends it with Error; a TCPStore connection is dropped then (the next call
/// reconnects), as its WAIT is left unanswered. Throws StoreError as the store does.
Task<bool> wait_for_keys(Store& store, std::vector<std::string> keys,
                         std::chrono::milliseconds timeout, CancelSignal& cancel);

/// The values of `keys` once wait_for_keys() saw them all: one round trip where the
/// store can (no second wait, as multi_get() would make); "" for a key gone meanwhile.
std::vector<std::string> values_now(Store& store, const std::vector<std::string>& keys);

}  // namespace ddprun::rendezvous
