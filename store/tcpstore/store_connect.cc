#include "store/tcpstore/store_connect.h"

#include <spdlog/spdlog.h>

#include "common/loop_waits.h"

namespace ddprun::store {
namespace {

using Clock = std::chrono::steady_clock;
// How long a store that accepted may stay silent before the console hears of it.
constexpr std::chrono::seconds kSilentPeerWarning{2};

}  // namespace

Task<std::unique_ptr<TcpStoreClient>> open_store_client(std::string host, int port,
                                                        TcpStoreClient::Options options,
                                                        Clock::time_point deadline,
                                                        CancelSignal& cancel) {
  net::Socket connected = co_await connect_on_loop(host, port, deadline, cancel);
  co_return co_await greet_store(std::move(host), port, std::move(options), std::move(connected),
                                 deadline, cancel);
}

namespace {

// The handshake of `client`'s new connection (job token, validation), each answer
// awaited within the call timeout, the whole within `deadline`: whichever is sooner.
// A silent peer is said a moment in, not only when the wait ends.
Task<void> shake_hands(TcpStoreClient& client, Clock::time_point deadline,
                       CancelSignal& cancel) {
  auto call = client.timeout();
  auto accepted = Clock::now();
  for (int fd = client.handshake_step(); fd >= 0; fd = client.handshake_step()) {
    auto until = std::min(Clock::now() + call, std::max(deadline, Clock::now()));
    auto first = std::min(until, Clock::now() + kSilentPeerWarning);
    bool answered = co_await wait_readable(fd, first, cancel);
    if (!answered && first < until) {
      auto left = std::chrono::ceil<std::chrono::seconds>(until - Clock::now());
      spdlog::warn(
          "the store at {} accepted the connection but has not answered for {} s (is it "
          "something other than a TCPStore?); waiting {} s more",
          client.address(), kSilentPeerWarning.count(), left.count());
      answered = co_await wait_readable(fd, until, cancel);
    }
    if (!answered) {
      client.drop();
      throw TimeoutError("the store at " + client.address() + " accepted the connection but " +
                         "did not answer within " +
                         std::to_string(
                             std::chrono::round<std::chrono::seconds>(until - accepted).count()) +
                         " s");
    }
  }
}

}  // namespace

Task<std::unique_ptr<TcpStoreClient>> greet_store(std::string host, int port,
                                                  TcpStoreClient::Options options,
                                                  net::Socket connected, Clock::time_point deadline,
                                                  CancelSignal& cancel) {
  auto client = std::make_unique<TcpStoreClient>(std::move(host), port, std::move(options),
                                                 std::move(connected));
  co_await shake_hands(*client, deadline, cancel);
  co_return client;
}

Task<void> reconnect_on_loop(TcpStoreClient& client, CancelSignal& cancel) {
  cancel.check();
  if (client.connected()) co_return;
  auto deadline = Clock::now() + client.timeout();
  net::Socket connected = co_await connect_on_loop(client.host(), client.port(), deadline, cancel);
  client.use(std::move(connected));
  try {
    co_await shake_hands(client, deadline, cancel);
  } catch (...) {
    client.drop();  // half greeted: the next call starts again
    throw;
  }
}

}  // namespace ddprun::store
