// Connecting to a store from a coroutine on a loop (open_store_client): a store not up
// yet is waited for with retries, the job token's handshake is made with each answer
// awaited on the loop, and a cancel ends the wait at once.
#include "store/tcpstore/store_connect.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/steady_timer.hpp>

#include "store/tcpstore/tcp_store_server.h"
#include "tests/helpers/free_port.h"
#include "tests/helpers/run_task.h"

namespace ddprun::store {
namespace {

using namespace std::chrono_literals;

TcpStoreClient::Options with_token(const std::string& token) {
  TcpStoreClient::Options o;
  o.timeout = 5s;
  o.token = token;
  return o;
}

TEST(StoreConnect, AStoreThatComesUpLaterIsReachedAndItsTokenProved) {
  int port = test::free_port();
  boost::asio::io_context io;
  std::unique_ptr<TcpStoreServer> server;
  boost::asio::steady_timer later(io, 100ms);  // first attempts find nothing listening
  later.async_wait([&](const boost::system::error_code&) {
    server = std::make_unique<TcpStoreServer>("127.0.0.1", static_cast<uint16_t>(port), "secret");
  });
  CancelSignal cancel;
  auto client =
      testing::run_task(io, open_store_client("127.0.0.1", port, with_token("secret"),
                                              std::chrono::steady_clock::now() + 30s, cancel));
  ASSERT_TRUE(server);
  client->set("k", "v");
  EXPECT_EQ(client->get("k", 1s), "v");
}

TEST(StoreConnect, AWrongTokenIsRefusedByName) {
  TcpStoreServer server("127.0.0.1", 0, "secret");
  CancelSignal cancel;
  try {
    testing::run_task(open_store_client("127.0.0.1", server.port(), with_token("a guess"),
                                        std::chrono::steady_clock::now() + 30s, cancel));
    FAIL() << "a wrong token got in";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("refused this node's job token"), std::string::npos)
        << e.what();
  }
}

TEST(StoreConnect, ACancelEndsTheRetriesAtOnce) {
  int port = test::free_port();
  boost::asio::io_context io;
  CancelSignal cancel("rendezvous cancelled");
  boost::asio::steady_timer later(io, 50ms);
  later.async_wait([&](const boost::system::error_code&) { cancel.cancel(); });
  try {
    testing::run_task(io, open_store_client("127.0.0.1", port, with_token(""),
                                            std::chrono::steady_clock::now() + 30s, cancel));
    FAIL() << "connected to nothing";
  } catch (const TimeoutError& e) {
    FAIL() << "timed out instead of cancelled: " << e.what();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "rendezvous cancelled");
  }
}

TEST(StoreConnect, APeerThatNeverAnswersTimesOutByName) {
  int port = 0;
  int fd = test::listen_on_loopback(port);
  ASSERT_GE(fd, 0);
  CancelSignal cancel;
  auto options = with_token("");
  options.timeout = 200ms;
  try {
    testing::run_task(open_store_client("127.0.0.1", port, options,
                                        std::chrono::steady_clock::now() + 30s, cancel));
    FAIL() << "a silent peer passed the handshake";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("did not answer"), std::string::npos) << e.what();
  }
  ::close(fd);
}

}  // namespace
}  // namespace ddprun::store
