#pragma once

#include <cstdint>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace ddprun::net {

/// A listening acceptor on host:port. `host` "" listens dual-stack on "::" (or
/// 0.0.0.0 where IPv6 is off); port 0 picks a free port. Throws StoreError naming the
/// address.
boost::asio::ip::tcp::acceptor open_acceptor(boost::asio::io_context& io, const std::string& host,
                                             uint16_t port);

}  // namespace ddprun::net
