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

/// Where a listener that other hosts reach at `advertised` should listen: that address
/// when it is this host's own (an address literal, or a name resolving here to one
/// address of this host other than loopback), else "" (every interface). A name that
/// resolves to loopback here may still be how the other hosts reach this one (Debian
/// maps a host's own name to 127.0.1.1), and an address of another host (a NAT, a
/// virtual IP) cannot be bound; a name with several of this host's addresses may be
/// reached at any of them.
std::string listen_host_for(const std::string& advertised);

}  // namespace ddprun::net
