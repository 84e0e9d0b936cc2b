#pragma once

#include <cstdint>
#include <string>

#include "common/cancel_signal.h"
#include "common/coro.h"
#include "store/loop_store.h"

namespace ddprun::rendezvous {

/// From a coroutine on the loop: raises the number at `key` to `mine` unless it is
/// already as large, by a compare-and-set from what was there, again while other
/// nodes raise it meanwhile; what is not a number is replaced. Returns the number
/// there now. One request when the key is already larger or not there yet, two when
/// this node raises it. Throws as the store does.
Task<int64_t> raise_to(store::LoopStore& store, std::string key, int64_t mine,
                       CancelSignal& cancel);

}  // namespace ddprun::rendezvous
