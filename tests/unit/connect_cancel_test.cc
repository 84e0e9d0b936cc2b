// net::cancel_connects() ends connects that would otherwise retry until their deadline.
// It is process-wide and permanent, so each case runs in a child process of its own.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <thread>

#include "net/socket.h"
#include "rendezvous/etcd_client.h"
#include "rendezvous/etcd_endpoint.h"
#include "rendezvous/tcp_store_client.h"
#include "tests/helpers/free_port.h"

namespace ddprun::net {
namespace {

using namespace std::chrono_literals;

// Exits 0 when a connect to a port nobody listens on, with a minute to retry, gave up
// because of the cancel.
void connect_then_cancel() {
  int port = ddprun::test::free_port();  // nothing listens there: connects retry
  bool cancelled = false;
  std::thread connector([&] {
    try {
      Socket::connect("127.0.0.1", port, std::chrono::steady_clock::now() + 60s);
    } catch (const ConnectCancelledError&) {
      cancelled = true;
    } catch (...) {
    }
  });
  cancel_connects();  // whether the connect is retrying yet or not
  connector.join();
  std::exit(cancelled ? 0 : 1);
}

TEST(ConnectCancelDeathTest, EndsAConnectThatWouldRetryForAMinute) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(connect_then_cancel(), ::testing::ExitedWithCode(0), "");
}

TEST(ConnectCancelDeathTest, LaterConnectsFailAtOnce) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        cancel_connects();
        try {
          Socket::connect("127.0.0.1", ddprun::test::free_port(),
                          std::chrono::steady_clock::now() + 60s);
        } catch (const ConnectCancelledError& e) {
          std::exit(std::string(e.what()).find("cancelled") != std::string::npos ? 0 : 2);
        }
        std::exit(1);
      },
      ::testing::ExitedWithCode(0), "");
}

// A peer that accepts connections and never answers (a program that is not a store
// holds the port, a frozen master or etcd member): `client` connects to it on a thread
// of its own; once its first request came, cancel_connects(). Exits 0 when the client
// gave up because of the cancel, long before its 20 s timeout (an etcd client would
// also end by the cancel, at its next connect: after its first attempt's 6.7 s, which
// the bound of 5 s tells apart from "at once").
void cancel_while_a_silent_peer_is_asked(const std::function<void(int port)>& client) {
  int port = 0;
  int listener = ddprun::test::listen_on_loopback(port);
  if (listener < 0) std::exit(3);
  bool cancelled = false;
  std::thread asker([&] {
    try {
      client(port);
    } catch (const ConnectCancelledError&) {
      cancelled = true;
    } catch (...) {
    }
  });
  int peer = ::accept(listener, nullptr, nullptr);
  char request[64];
  if (peer < 0 || ::recv(peer, request, sizeof(request), 0) <= 0) std::exit(4);
  cancel_connects();  // the client is connected and waits for the answer
  auto cancelled_at = std::chrono::steady_clock::now();
  asker.join();
  bool at_once = std::chrono::steady_clock::now() - cancelled_at < 5s;
  std::exit(cancelled && at_once ? 0 : 1);
}

TEST(ConnectCancelDeathTest, EndsAStoreClientWhosePeerAcceptedButNeverAnswers) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(cancel_while_a_silent_peer_is_asked([](int port) {
                rendezvous::TcpStoreClient::Options o;
                o.timeout = 20s;
                rendezvous::TcpStoreClient("127.0.0.1", port, o);
              }),
              ::testing::ExitedWithCode(0), "");
}

TEST(ConnectCancelDeathTest, EndsAnEtcdCallToAMemberThatAcceptedButNeverAnswers) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(cancel_while_a_silent_peer_is_asked([](int port) {
                rendezvous::EtcdClient etcd(
                    rendezvous::parse_etcd_endpoints("127.0.0.1:" + std::to_string(port)), 20s);
                etcd.grant_lease(10);
              }),
              ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace ddprun::net
