#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/cancel_signal.h"
#include "common/coro.h"
#include "net/socket.h"
#include "store/loop_socket.h"
#include "store/tcpstore/tcp_store_client.h"

namespace ddprun::store {

/// A client of the TCPStore at host:port from a coroutine on a loop: connect_on_loop()
/// until `deadline`, then the handshake (job token, validation), each answer awaited as
/// the loop's completion within `options.timeout`: a store that accepted and never
/// answers holds nothing else up either. Throws TimeoutError / StoreError naming the
/// store, Error once `cancel` is cancelled.
Task<std::unique_ptr<TcpStoreClient>> open_store_client(
    std::string host, int port, TcpStoreClient::Options options,
    std::chrono::steady_clock::time_point deadline, CancelSignal& cancel);

/// Makes `client`'s connection again where it was dropped (a cancelled or timed-out
/// request), on the loop as open_store_client() does, within the client's call
/// timeout; nothing when it is connected.
Task<void> reconnect_on_loop(TcpStoreClient& client, CancelSignal& cancel);

/// open_store_client() over a socket already connected to host:port: the handshake alone.
Task<std::unique_ptr<TcpStoreClient>> greet_store(std::string host, int port,
                                                  TcpStoreClient::Options options,
                                                  net::Socket connected,
                                                  std::chrono::steady_clock::time_point deadline,
                                                  CancelSignal& cancel);

}  // namespace ddprun::store
