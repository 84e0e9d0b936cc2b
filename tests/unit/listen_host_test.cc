// Where a listener that other hosts reach listens (net/listen.h): the advertised
// address when it is this host's, every interface otherwise.
#include <gtest/gtest.h>

#include "net/listen.h"

namespace ddprun::net {
namespace {

TEST(ListenHost, AnAddressOfThisHostIsListenedOnAlone) {
  EXPECT_EQ(listen_host_for("127.0.0.2"), "127.0.0.2");
  EXPECT_EQ(listen_host_for("127.0.0.1"), "127.0.0.1");
}

TEST(ListenHost, OtherwiseEveryInterface) {
  EXPECT_EQ(listen_host_for(""), "");
  // Another host's address (TEST-NET-1, never assigned): it cannot be bound here.
  EXPECT_EQ(listen_host_for("192.0.2.1"), "");
  // A name resolving to loopback here may be how the other hosts reach this one.
  EXPECT_EQ(listen_host_for("localhost"), "");
  EXPECT_EQ(listen_host_for("no-such-host.invalid"), "");
}

}  // namespace
}  // namespace ddprun::net
