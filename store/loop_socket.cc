#include "store/loop_socket.h"

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
  throw ConnectTimeout(peer, error);
}

ConnectWaitSaid::ConnectWaitSaid(std::string what, std::string host, int port,
                                 std::string bound_by, Clock::time_point deadline)
    : what_(std::move(what) + " at " + host + ":" + std::to_string(port)),
      host_(std::move(host)),
      port_(port),
      bound_by_(std::move(bound_by)),
      deadline_(deadline),
      say_at_(Clock::now() + kFirstAfter) {}

void ConnectWaitSaid::failed(const std::string& why) {
  if (Clock::now() < say_at_) return;
  auto left = std::chrono::ceil<std::chrono::seconds>(deadline_ - Clock::now());
  spdlog::warn("waiting for {} ({} s left, {}): {}", what_, left.count(), bound_by_, why);
  say_at_ = Clock::now() + kEvery;
}

Task<net::Socket> connect_saying_why(std::string what, std::string host, int port,
                                     std::string bound_by, Clock::time_point deadline,
                                     CancelSignal& cancel) {
  ConnectWaitSaid said(std::move(what), std::move(host), port, std::move(bound_by), deadline);
  while (true) {
    auto until = std::min(deadline, said.next_line());
    try {
      co_return co_await connect_on_loop(said.host(), said.port(), until, cancel);
    } catch (const ConnectTimeout& e) {
      if (until == deadline) throw;
      said.failed(e.reason());
    }
  }
}

Task<void> send_on_loop(net::Socket& socket, std::string bytes, Clock::time_point deadline,
                        CancelSignal& cancel) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    size_t n = socket.send_some(bytes.data() + sent, bytes.size() - sent);
    sent += n;
    if (n == 0 && !co_await wait_writable(socket.fd(), deadline, cancel)) {
      socket.close();  // the request is half sent: the stream is at an unknown point
      throw TimeoutError("timed out sending to " + socket.peer());
    }
  }
}

}  // namespace ddprun::store
