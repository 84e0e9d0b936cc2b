#include "net/listen.h"

#include <vector>

#include <boost/asio/ip/v6_only.hpp>

#include "common/error.h"

namespace asio = boost::asio;
using asio::ip::tcp;

namespace ddprun::net {

tcp::acceptor open_acceptor(asio::io_context& io, const std::string& host, uint16_t port) {
  std::vector<tcp::endpoint> candidates;
  if (host.empty()) {
    candidates = {tcp::endpoint(tcp::v6(), port), tcp::endpoint(tcp::v4(), port)};
  } else {
    tcp::resolver resolver(io);
    boost::system::error_code ec;
    for (const auto& e : resolver.resolve(host, std::to_string(port), ec))
      candidates.push_back(e.endpoint());
    if (ec || candidates.empty()) {
      throw StoreError("cannot resolve store address " + host + ": " + ec.message());
    }
  }
  boost::system::error_code ec;
  for (const auto& ep : candidates) {
    tcp::acceptor acceptor(io);
    acceptor.open(ep.protocol(), ec);
    if (ec) continue;
    acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (ep.protocol() == tcp::v6() && host.empty()) {
      acceptor.set_option(asio::ip::v6_only(false), ec);
    }
    acceptor.bind(ep, ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (!ec) return acceptor;
  }
  throw StoreError("cannot listen on " + (host.empty() ? std::string("*") : host) + ":" +
                   std::to_string(port) + ": " + ec.message());
}

}  // namespace ddprun::net
