#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/cancel_signal.h"
#include "common/coro.h"
#include "store/tcpstore/tcp_store_client.h"

namespace ddprun::store {

// A TCPStore connection's quick requests (one round trip each) from a coroutine on a
// loop: the request is sent and the answer read as they go, each wait the loop's
// completion, within the client's call timeout (TimeoutError naming the store);
// `cancel` ends the wait at once (Error). A connection whose answer is left unread
// (timeout, cancel, a malformed answer) is dropped: the next call reconnects.
// The 2.x protocol (ddprun's server, PyTorch 2's); 1.13's has no MULTI_GET.

/// The values of `keys` now; nullopt for a key that is not there (an empty value too).
Task<std::vector<std::optional<std::string>>> get_now_on_loop(TcpStoreClient& client,
                                                              std::vector<std::string> keys,
                                                              CancelSignal& cancel);
/// Sets `key` (the store answers nothing: the next request's answer comes after it).
Task<void> set_on_loop(TcpStoreClient& client, std::string key, std::string value,
                       CancelSignal& cancel);
/// Sets each key to its value, in one request (MULTI_SET; answered with nothing, as SET).
Task<void> multi_set_on_loop(TcpStoreClient& client, std::vector<std::string> keys,
                             std::vector<std::string> values, CancelSignal& cancel);
/// Adds `delta` to the counter `key`; returns its new value.
Task<int64_t> add_on_loop(TcpStoreClient& client, std::string key, int64_t delta,
                          CancelSignal& cancel);
/// Sets `key` to `desired` if it holds `expected` ("" = missing); returns its value after.
Task<std::string> compare_set_on_loop(TcpStoreClient& client, std::string key,
                                      std::string expected, std::string desired,
                                      CancelSignal& cancel);

/// Until every one of `keys` exists (true) or `timeout` passes (false: the wait is
/// withdrawn; 1.13 cannot, and the connection is dropped). The values are not read.
/// `cancel` drops the connection, whose WAIT is left unanswered.
Task<bool> wait_on_loop(TcpStoreClient& client, std::vector<std::string> keys,
                        std::chrono::milliseconds timeout, CancelSignal& cancel);
/// Deletes `key`; whether it was there.
Task<bool> delete_on_loop(TcpStoreClient& client, std::string key, CancelSignal& cancel);
/// One round trip with `nonce` (2.x); returns the nonce echoed.
Task<uint32_t> ping_on_loop(TcpStoreClient& client, uint32_t nonce, CancelSignal& cancel);

}  // namespace ddprun::store
