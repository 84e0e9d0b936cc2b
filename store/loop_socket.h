#pragma once

#include <chrono>
#include <string>

#include "common/cancel_signal.h"
#include "common/coro.h"
#include "net/socket.h"

namespace ddprun::store {

// A store's connection as a coroutine on a loop makes and uses it: each wait is the
// loop's completion, which `cancel` ends at once (Error).

/// Connects to host:port (IPv4, IPv6, names) from a coroutine on a loop, as
/// net::Socket::connect() does (every address of the name, again with backoff while
/// nothing listens there, until `deadline`), but each attempt's wait and each pause are
/// the loop's completions: a store that is not up yet holds nothing else up, and
/// `cancel` ends the wait at once (Error). Throws TimeoutError naming the store and the
/// last error at `deadline`. (Resolving the name is one blocking call each time.)
Task<net::Socket> connect_on_loop(std::string host, int port,
                                  std::chrono::steady_clock::time_point deadline,
                                  CancelSignal& cancel);

/// Sends all of `bytes` on `socket` by `deadline`, waiting while the kernel takes no
/// more. TimeoutError (the socket closed: the request is half sent), StoreError where
/// the connection is lost.
Task<void> send_on_loop(net::Socket& socket, std::string bytes,
                        std::chrono::steady_clock::time_point deadline, CancelSignal& cancel);

}  // namespace ddprun::store
