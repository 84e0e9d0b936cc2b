// Who hosts the c10d store: a node that may host but could not listen on the endpoint
// (two agents that start at once can both fail to) hosts it once nobody listens there.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/steady_timer.hpp>

#include "rendezvous/backends/c10d_backend.h"
#include "tests/helpers/free_port.h"
#include "tests/helpers/run_task.h"

namespace ddprun::rendezvous {
namespace {

using namespace std::chrono_literals;

RendezvousParams params() {
  RendezvousParams p;
  p.backend = Backend::kC10d;
  p.c10d_host = "127.0.0.1";
  p.c10d_port = test::free_port();
  p.join_timeout = 30s;
  return p;
}

// A socket bound to the port and not listening: binding there fails, and nothing answers.
int hold_port(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  return fd;
}

Task<int> reach(C10dBackend& backend, CancelSignal& cancel, bool join_only) {
  co_await backend.reach(cancel, join_only);
  co_return 0;
}

TEST(C10dHosting, ANodeThatCouldNotListenHostsOnceNobodyDoes) {
  RendezvousParams p = params();
  int held = hold_port(p.c10d_port);
  C10dBackend backend(p, /*connect_later=*/true);
  ASSERT_FALSE(backend.hosts_state());
  boost::asio::io_context io;
  boost::asio::steady_timer release(io, 200ms);
  release.async_wait([&](const boost::system::error_code&) { ::close(held); });
  CancelSignal cancel;
  testing::run_task(io, reach(backend, cancel, false));
  EXPECT_TRUE(backend.hosts_state());
}

// An unfit node only tells the others: it never becomes the store they need.
TEST(C10dHosting, AJoinOnlyReachNeverHosts) {
  RendezvousParams p = params();
  p.join_timeout = 1s;
  int held = hold_port(p.c10d_port);
  C10dBackend backend(p, /*connect_later=*/true);
  ::close(held);
  CancelSignal cancel;
  EXPECT_THROW(testing::run_task(reach(backend, cancel, true)), TimeoutError);
  EXPECT_FALSE(backend.hosts_state());
}

}  // namespace
}  // namespace ddprun::rendezvous
