#pragma once

#include <boost/asio/ip/address.hpp>

namespace ddprun::net {

/// An IPv4 client of a dual-stack listener shows as ::ffff:a.b.c.d: as a.b.c.d.
inline boost::asio::ip::address unmapped(const boost::asio::ip::address& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, a.to_v6());
  }
  return a;
}

/// 127.0.0.1 or ::1, the addresses this host's own processes reach a server by. The
/// rest of 127/8 is not: on one machine, tests stand other nodes there.
inline bool is_loopback_peer(const boost::asio::ip::address& a) {
  return a == boost::asio::ip::address_v4::loopback() ||
         a == boost::asio::ip::address_v6::loopback();
}

}  // namespace ddprun::net
