// Preflight's link check: which node or link of a round is far slower than the others,
// from the ring of probes (node g probed node g+1).
#include <gtest/gtest.h>

#include "common/coro.h"  // before Asio's other coroutine headers

#include <unistd.h>

#include <boost/asio/steady_timer.hpp>

#include "agent/preflight/link_probe.h"
#include "store/tcpstore/tcp_store_client.h"
#include "store/tcpstore/tcp_store_server.h"
#include "tests/helpers/free_port.h"
#include "tests/helpers/run_task.h"

namespace ddprun::agent {
namespace {

LinkFigures fast() { return {0.1, 1000, 1000, ""}; }

const std::vector<std::string> kNodes{"n0", "n1", "n2", "n3"};

TEST(SlowLinks, AUniformRoundHasNone) {
  std::vector<LinkFigures> p{fast(), {0.12, 900, 1100, ""}, {0.09, 1200, 800, ""}, fast()};
  EXPECT_TRUE(slow_links(kNodes, p).empty());
}

// A slow node also slows the answers its neighbours' probes wait for: the probe into
// it is slow both ways, as is its own.
TEST(SlowLinks, ANodeWithoutAFastProbeIsNamed) {
  std::vector<LinkFigures> p{fast(), fast(), fast(), fast()};
  p[2] = {0.1, 2, 8, ""};  // n2 to n3
  p[1] = {0.1, 9, 2, ""};  // n1 to n2
  auto said = slow_links(kNodes, p);
  ASSERT_EQ(said.size(), 1u);
  EXPECT_EQ(said[0],
            "node n2's link is slow: at best 2 MB/s against a median of 1000 (to n3: 2 MB/s "
            "there, 8 back, round trip 0.10 ms; from n1: 9 MB/s there, 2 back, round trip 0.10 ms)");
}

// Three nodes, one of them slow: two of the three probes are slow, so only the nodes'
// best figures tell which node it is.
TEST(SlowLinks, OfThreeNodesTheSlowOneIsNamed) {
  std::vector<LinkFigures> p{{0.02, 418, 981, ""}, {0.02, 9, 2, ""}, {0.02, 2, 8, ""}};
  auto said = slow_links({"a", "b", "c"}, p);
  ASSERT_EQ(said.size(), 1u);
  EXPECT_EQ(said[0].rfind("node c's link is slow: at best 2 MB/s against a median of 418", 0), 0u)
      << said[0];
}

TEST(SlowLinks, OneSlowProbeBetweenHealthyNodesNamesItsLink) {
  std::vector<LinkFigures> p{fast(), fast(), fast(), fast()};
  p[3].rtt_ms = 5;  // n3 to n0
  auto said = slow_links(kNodes, p);
  ASSERT_EQ(said.size(), 1u);
  EXPECT_EQ(said[0],
            "the link between n3 and n0 is slow: round trip 5.00 ms against a median of 0.10 "
            "(1000 MB/s there, 1000 back, round trip 5.00 ms)");
}

TEST(SlowLinks, SmallDifferencesAndTinyRoundTripsAreNoFinding) {
  std::vector<LinkFigures> p{fast(), fast(), fast(), fast()};
  p[0].up_mbps = 300;  // a third of the median
  p[1].rtt_ms = 0.9;   // 9 times the median, but under 1 ms more
  EXPECT_TRUE(slow_links(kNodes, p).empty());
}

TEST(SlowLinks, TwoNodesOrMissingFiguresCompareNothing) {
  std::vector<LinkFigures> two{fast(), {5, 1, 1, ""}};
  EXPECT_TRUE(slow_links({"a", "b"}, two).empty());
  std::vector<LinkFigures> p{fast(), LinkFigures::from_json(""), {0.1, 1, 1, ""}, fast()};
  EXPECT_TRUE(slow_links(kNodes, p).empty()) << "a node sent no figures";
}

TEST(SlowLinks, FiguresTravelAsJson) {
  LinkFigures f{0.25, 123.5, 99, ""};
  LinkFigures back = LinkFigures::from_json(f.to_json());
  EXPECT_EQ(back.rtt_ms, 0.25);
  EXPECT_EQ(back.up_mbps, 123.5);
  EXPECT_EQ(back.down_mbps, 99);
  EXPECT_TRUE(back.error.empty());
  EXPECT_EQ(LinkFigures::from_json("not json").error, "no figures");
}

// The probe speaks to another node's workers' store, and leaves nothing in it.
TEST(LinkProbe, MeasuresTheLinkToAStore) {
  store::TcpStoreServer server("127.0.0.1", 0);
  CancelSignal cancel;
  LinkFigures f = testing::run_task(
      probe_link("127.0.0.1", server.port(), std::chrono::milliseconds(400), cancel));
  EXPECT_EQ(f.error, "");
  EXPECT_GT(f.rtt_ms, 0);
  EXPECT_GT(f.up_mbps, 0);
  EXPECT_GT(f.down_mbps, 0);
  store::TcpStoreClient check("127.0.0.1", server.port());
  EXPECT_EQ(check.num_keys(), 0) << "the probe's key is gone";
}

TEST(LinkProbe, ANodeThatCannotBeReachedIsAnErrorNotAFigure) {
  int port = 0;
  {
    store::TcpStoreServer gone("127.0.0.1", 0);
    port = gone.port();
  }
  CancelSignal cancel;
  LinkFigures f =
      testing::run_task(probe_link("127.0.0.1", port, std::chrono::milliseconds(200), cancel));
  EXPECT_NE(f.error.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << f.error;
}

// The probe is the loop's: while it waits for a node that does not answer, the loop
// goes on with the rest of its work, and a cancel ends the probe at once with an error,
// not figures.
TEST(LinkProbe, ItSharesTheLoopAndACancelEndsIt) {
  int port = 0;
  int silent = test::listen_on_loopback(port);  // accepts, never answers
  ASSERT_GE(silent, 0);
  boost::asio::io_context io;
  CancelSignal cancel("link probe cancelled");
  int ticks = 0;
  boost::asio::steady_timer tick(io);
  std::function<void()> again = [&] {
    tick.expires_after(std::chrono::milliseconds(5));
    tick.async_wait([&](boost::system::error_code ec) {
      if (ec) return;
      if (++ticks == 10) cancel.cancel();
      again();
    });
  };
  again();
  auto probe = [&]() -> Task<LinkFigures> {
    LinkFigures f = co_await probe_link("127.0.0.1", port, std::chrono::seconds(30), cancel);
    tick.cancel();
    co_return f;
  };
  LinkFigures f = testing::run_task(io, probe());
  ::close(silent);
  EXPECT_EQ(ticks, 10) << "the loop's other work went on during the probe";
  EXPECT_EQ(f.error, "link probe cancelled");
}

}  // namespace
}  // namespace ddprun::agent
