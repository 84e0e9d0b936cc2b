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

Task<std::unique_ptr<TcpStoreClient>> greet_store(std::string host, int port,
                                                  TcpStoreClient::Options options,
                                                  net::Socket connected, Clock::time_point deadline,
                                                  CancelSignal& cancel) {
  auto call = options.timeout;
  auto accepted = Clock::now();
  auto client = std::make_unique<TcpStoreClient>(std::move(host), port, std::move(options),
                                                 std::move(connected));
  for (int fd = client->handshake_step(); fd >= 0; fd = client->handshake_step()) {
    // Each answer within the call timeout, and the whole within `deadline`: whichever
    // is sooner. A silent peer is said a moment in, not only when the wait ends.
    auto until = std::min(Clock::now() + call, std::max(deadline, Clock::now()));
    auto first = std::min(until, Clock::now() + kSilentPeerWarning);
    bool answered = co_await wait_readable(fd, first, cancel);
    if (!answered && first < until) {
      auto left = std::chrono::ceil<std::chrono::seconds>(until - Clock::now());
      spdlog::warn(
          "the store at {} accepted the connection but has not answered for {} s (is it "
          "something other than a TCPStore?); waiting {} s more",
          client->address(), kSilentPeerWarning.count(), left.count());
      answered = co_await wait_readable(fd, until, cancel);
    }
    if (!answered) {
      throw TimeoutError("the store at " + client->address() + " accepted the connection but " +
                         "did not answer within " +
                         std::to_string(
                             std::chrono::round<std::chrono::seconds>(until - accepted).count()) +
                         " s");
    }
  }
  co_return client;
}

}  // namespace ddprun::store
