#include "store/tcpstore/store_connect.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>

#include <spdlog/spdlog.h>

#include "common/loop_waits.h"

namespace ddprun::store {
namespace {

using Clock = std::chrono::steady_clock;
// How long a store that accepted may stay silent before the console hears of it.
constexpr std::chrono::seconds kSilentPeerWarning{2};

struct AddressesDeleter {
  void operator()(addrinfo* a) const { ::freeaddrinfo(a); }
};
using Addresses = std::unique_ptr<addrinfo, AddressesDeleter>;

// One attempt at one address: the connected socket, or nullopt with `error` said.
Task<std::optional<net::Socket>> attempt(const addrinfo* ai, const std::string& peer,
                                         Clock::time_point deadline, CancelSignal& cancel,
                                         std::string& error) {
  int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    error = std::strerror(errno);
    co_return std::nullopt;
  }
  net::Socket socket = net::Socket::adopt(fd, peer);  // closed unless it connects
  if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      error = std::strerror(errno);
      co_return std::nullopt;
    }
    int err = ETIMEDOUT;
    if (co_await wait_writable(fd, deadline, cancel)) {
      socklen_t len = sizeof(err);
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    }
    if (err != 0) {
      error = std::strerror(err);
      co_return std::nullopt;
    }
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  co_return socket;
}

}  // namespace

Task<net::Socket> connect_on_loop(std::string host, int port, Clock::time_point deadline,
                                  CancelSignal& cancel) {
  std::string peer =
      (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
  std::chrono::microseconds backoff = std::chrono::milliseconds(10);
  std::string error = "timed out";
  while (true) {
    cancel.check();
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
    Addresses addresses(found);
    if (rc != 0) error = ::gai_strerror(rc);
    for (const addrinfo* ai = rc == 0 ? found : nullptr; ai; ai = ai->ai_next) {
      auto socket = co_await attempt(ai, peer, deadline, cancel, error);
      if (socket) co_return std::move(*socket);
    }
    if (Clock::now() + backoff >= deadline) break;
    co_await sleep_for(backoff, cancel);
    backoff = std::min<std::chrono::microseconds>(backoff * 2, std::chrono::seconds(1));
  }
  throw TimeoutError("cannot connect to the store at " + peer + ": " + error);
}

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
