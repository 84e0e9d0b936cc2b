// net::cancel_connects() ends connects that would otherwise retry until their deadline.
// It is process-wide and permanent, so each case runs in a child process of its own.
#include <gtest/gtest.h>

#include <thread>

#include "net/socket.h"
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

}  // namespace
}  // namespace ddprun::net
