#include "net/listen.h"

#include <set>
#include <vector>

#include <boost/asio/ip/v6_only.hpp>

#include "common/error.h"

namespace asio = boost::asio;
using asio::ip::tcp;

namespace ddprun::net {

tcp::acceptor open_acceptor(asio::io_context& io, const std::string& host, uint16_t port) {
  std::vector<tcp::endpoint> candidates;
  boost::system::error_code numeric;
  auto address = host.empty() ? asio::ip::address() : asio::ip::make_address(host, numeric);
  if (host.empty()) {
    candidates = {tcp::endpoint(tcp::v6(), port), tcp::endpoint(tcp::v4(), port)};
  } else if (!numeric) {
    // An address needs no resolver (whose lookup of this host's interfaces costs a
    // netlink round trip on every launch).
    candidates = {tcp::endpoint(address, port)};
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
  throw ListenError("cannot listen on " + (host.empty() ? std::string("*") : host) + ":" +
                   std::to_string(port) + ": " + ec.message());
}

namespace {

// Whether `address` is one of this host's (it can be bound).
bool bindable(const tcp::endpoint& address) {
  asio::io_context io;
  tcp::acceptor probe(io);
  boost::system::error_code ec;
  probe.open(address.protocol(), ec);
  if (!ec) probe.bind(tcp::endpoint(address.address(), 0), ec);
  return !ec;
}

}  // namespace

std::string listen_host_for(const std::string& advertised) {
  if (advertised.empty()) return "";
  boost::system::error_code ec;
  auto literal = asio::ip::make_address(advertised, ec);
  if (!ec) return bindable(tcp::endpoint(literal, 0)) ? literal.to_string() : "";
  asio::io_context io;
  tcp::resolver resolver(io);
  std::set<asio::ip::address> own;
  for (const auto& e : resolver.resolve(advertised, "0", ec)) {
    if (!e.endpoint().address().is_loopback() && bindable(e.endpoint())) {
      own.insert(e.endpoint().address());
    }
  }
  // One listener binds one address: a name with several of this host's (IPv4 and
  // IPv6, say) may be reached at any of them.
  return own.size() == 1 ? own.begin()->to_string() : "";
}

}  // namespace ddprun::net
