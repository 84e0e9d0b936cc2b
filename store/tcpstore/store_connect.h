#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/cancel_signal.h"
#include "common/coro.h"
#include "net/socket.h"
#include "store/tcpstore/tcp_store_client.h"

namespace ddprun::store {

/// Connects to host:port (IPv4, IPv6, names) from a coroutine on a loop, as
/// net::Socket::connect() does (every address of the name, again with backoff while
/// nothing listens there, until `deadline`), but each attempt's wait and each pause are
/// the loop's completions: a store that is not up yet holds nothing else up, and
/// `cancel` ends the wait at once (Error). Throws TimeoutError naming the store and the
/// last error at `deadline`. (Resolving the name is one blocking call each time.)
Task<net::Socket> connect_on_loop(std::string host, int port,
                                  std::chrono::steady_clock::time_point deadline,
                                  CancelSignal& cancel);

/// A client of the TCPStore at host:port from a coroutine on a loop: connect_on_loop()
/// until `deadline`, then the handshake (job token, validation), each answer awaited as
/// the loop's completion within `options.timeout`: a store that accepted and never
/// answers holds nothing else up either. Throws TimeoutError / StoreError naming the
/// store, Error once `cancel` is cancelled.
Task<std::unique_ptr<TcpStoreClient>> open_store_client(
    std::string host, int port, TcpStoreClient::Options options,
    std::chrono::steady_clock::time_point deadline, CancelSignal& cancel);

/// open_store_client() over a socket already connected to host:port: the handshake alone.
Task<std::unique_ptr<TcpStoreClient>> greet_store(std::string host, int port,
                                                  TcpStoreClient::Options options,
                                                  net::Socket connected,
                                                  std::chrono::steady_clock::time_point deadline,
                                                  CancelSignal& cancel);

}  // namespace ddprun::store
