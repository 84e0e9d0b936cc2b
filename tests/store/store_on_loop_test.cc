// A TCPStore connection's quick requests awaited on a loop (store_on_loop.h): answers
// read as they arrive (however they are split), a silent store named after the call
// timeout, a cancel that ends the wait at once, and a malformed answer refused; after
// each failure the connection is dropped and the next call reconnects.
#include "store/tcpstore/store_on_loop.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/steady_timer.hpp>
#include <map>
#include <thread>

#include "store/loop_store.h"
#include "store/tcpstore/tcp_store_server.h"
#include "tests/helpers/run_task.h"

namespace ddprun::store {
namespace {

using namespace std::chrono_literals;
using testing::run_task;

// A listener on loopback that accepts (the kernel does) and never answers.
struct SilentPeer {
  SilentPeer() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(::listen(fd, 4), 0);
    socklen_t len = sizeof(a);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~SilentPeer() { ::close(fd); }
  int fd;
  int port;
};

// 1.13's numbering: no handshake, so a silent peer is met by the call itself.
TcpStoreClient::Options v113(std::chrono::milliseconds timeout) {
  TcpStoreClient::Options o;
  o.timeout = timeout;
  o.numbering = tcpstore::Numbering::kV113;
  return o;
}

// Runs `task` on a loop of its own, whose timer cancels `cancel` ("stopping") at 50 ms:
// it ends with that cancel, neither timed out nor answered (`answered` says what that
// would mean).
template <typename T>
void expect_cancelled_at_50ms(Task<T> task, CancelSignal& cancel, const std::string& answered) {
  boost::asio::io_context io;
  boost::asio::steady_timer later(io, 50ms);
  later.async_wait([&](const boost::system::error_code&) { cancel.cancel(); });
  try {
    run_task(io, std::move(task));
    FAIL() << answered;
  } catch (const TimeoutError&) {
    FAIL() << "timed out instead of cancelled";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "stopping");
  }
}

TEST(StoreOnLoop, QuickRequestsAreAnsweredAsTheBlockingOnesAre) {
  TcpStoreServer server("127.0.0.1", 0);
  TcpStoreClient client("127.0.0.1", server.port());
  CancelSignal cancel;
  std::string big(3 * 1024 * 1024, 'x');  // arrives in many reads
  run_task(set_on_loop(client, "big", big, cancel));
  run_task(set_on_loop(client, "empty", "", cancel));
  auto values = run_task(get_now_on_loop(client, {"big", "missing", "empty"}, cancel));
  ASSERT_EQ(values.size(), 3u);
  EXPECT_EQ(values[0], big);
  EXPECT_EQ(values[1], std::nullopt);
  EXPECT_EQ(values[2], std::nullopt);
  EXPECT_EQ(run_task(add_on_loop(client, "n", 5, cancel)), 5);
  EXPECT_EQ(run_task(add_on_loop(client, "n", -2, cancel)), 3);
  EXPECT_EQ(run_task(compare_set_on_loop(client, "cas", "", "first", cancel)), "first");
  EXPECT_EQ(run_task(compare_set_on_loop(client, "cas", "wrong", "second", cancel)), "first");
  EXPECT_EQ(run_task(compare_set_on_loop(client, "cas", "first", "second", cancel)), "second");
  EXPECT_EQ(client.get("cas", 1s), "second");  // the blocking calls follow on the same connection
  EXPECT_TRUE(run_task(get_now_on_loop(client, {}, cancel)).empty());
  EXPECT_EQ(run_task(ping_on_loop(client, 77, cancel)), 77u);
  EXPECT_TRUE(run_task(delete_on_loop(client, "cas", cancel)));
  EXPECT_FALSE(run_task(delete_on_loop(client, "cas", cancel))) << "gone already";
}

// The loop speaks the 2.x protocol only (several keys in one round trip): a client of
// 1.13's numbering is refused by name, not half served.
TEST(StoreOnLoop, AClientOf113sProtocolIsRefused) {
  auto client = std::make_unique<TcpStoreClient>("127.0.0.1", 1, v113(1s), net::Socket());
  try {
    on_loop(std::move(client));
    FAIL() << "a 1.13 client went on the loop";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("2.x protocol"), std::string::npos) << e.what();
  }
}

// A value larger than the kernel takes at once is sent as the store reads it, each
// wait the loop's: a store that reads nothing holds the loop up no more than one that
// answers nothing, and a cancel ends the send and drops the half-sent request.
TEST(StoreOnLoop, ALargeValueIsSentAsTheStoreTakesIt) {
  SilentPeer peer;
  TcpStoreClient client("127.0.0.1", peer.port, v113(30s));
  CancelSignal cancel("stopping");
  std::string huge(64 * 1024 * 1024, 'x');
  expect_cancelled_at_50ms(set_on_loop(client, "k", huge, cancel), cancel,
                           "64 MiB went to a peer that reads nothing");
  EXPECT_FALSE(client.connected()) << "the half-sent request's connection is dropped";
}

TEST(StoreOnLoop, ASilentStoreIsNamedAfterTheCallTimeout) {
  SilentPeer peer;
  TcpStoreClient client("127.0.0.1", peer.port, v113(200ms));
  CancelSignal cancel;
  try {
    run_task(add_on_loop(client, "n", 1, cancel));
    FAIL() << "a silent store answered";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(peer.port) +
                                         " did not answer within 200 ms"),
              std::string::npos)
        << e.what();
  }
}

TEST(StoreOnLoop, ACancelEndsTheWaitForAnAnswerAtOnce) {
  SilentPeer peer;
  TcpStoreClient client("127.0.0.1", peer.port, v113(30s));
  CancelSignal cancel("stopping");
  expect_cancelled_at_50ms(add_on_loop(client, "n", 1, cancel), cancel, "a silent store answered");
}

// A dropped connection is made again by the next request, its handshake on the loop: a
// store that accepts and never greets holds nothing up, and a cancel ends the wait.
TEST(StoreOnLoop, ADroppedConnectionIsMadeAgainOnTheLoop) {
  TcpStoreServer server("127.0.0.1", 0);
  TcpStoreClient client("127.0.0.1", server.port());
  CancelSignal cancel;
  run_task(set_on_loop(client, "k", "v", cancel));
  client.drop();
  EXPECT_FALSE(client.connected());
  EXPECT_EQ(run_task(get_now_on_loop(client, {"k"}, cancel)),
            (std::vector<std::optional<std::string>>{std::string("v")}));
  EXPECT_TRUE(client.connected());

  SilentPeer peer;  // accepts, never answers the handshake
  TcpStoreClient::Options v2;
  v2.timeout = 30s;
  TcpStoreClient unanswered("127.0.0.1", peer.port, v2, net::Socket());
  boost::asio::io_context io;
  CancelSignal stopping("stopping");
  boost::asio::steady_timer later(io, 50ms);
  later.async_wait([&](const boost::system::error_code&) { stopping.cancel(); });
  try {
    run_task(io, add_on_loop(unanswered, "n", 1, stopping));
    FAIL() << "a silent store answered";
  } catch (const TimeoutError&) {
    FAIL() << "timed out instead of cancelled: the handshake held the loop";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "stopping");
  }
  EXPECT_FALSE(unanswered.connected()) << "half greeted: the next call starts again";
}

// The host's wait for the others to let go, at a job's end, is the loop's: a client
// that leaves meanwhile (here on the same loop) ends it.
TEST(StoreOnLoop, TheHostsWaitForTheOthersToLeaveIsTheLoops) {
  TcpStoreServer server("127.0.0.1", 0);
  TcpStoreClient client("127.0.0.1", server.port());
  client.set("k", "v");
  ASSERT_EQ(server.connection_count(), 1u);
  boost::asio::io_context io;
  boost::asio::steady_timer later(io, 50ms);
  later.async_wait([&](const boost::system::error_code&) { client.drop(); });
  CancelSignal cancel;
  run_task(io, server.connections_at_most(0, 60s, cancel));
  EXPECT_FALSE(client.connected()) << "the wait ended as the client left, not at its bound";
  EXPECT_EQ(server.connection_count(), 0u);
}

// A stop signal's last words ending that wait end it quietly: the host leaves now,
// with its job's own outcome, not an error.
TEST(StoreOnLoop, TheHostsWaitForTheOthersEndsQuietlyWhenCancelled) {
  TcpStoreServer server("127.0.0.1", 0);
  TcpStoreClient client("127.0.0.1", server.port());
  client.set("k", "v");
  boost::asio::io_context io;
  CancelSignal cancel;
  boost::asio::steady_timer later(io, 50ms);
  later.async_wait([&](const boost::system::error_code&) { cancel.cancel(); });
  EXPECT_NO_THROW(run_task(io, server.connections_at_most(0, 60s, cancel)));
  EXPECT_TRUE(cancel.cancelled());
  EXPECT_EQ(server.connection_count(), 1u) << "the client stays; the wait ended all the same";
}

// Reads exactly `n` bytes of what the client sent.
std::string read_exactly(int conn, size_t n) {
  std::string got(n, '\0');
  size_t have = 0;
  while (have < n) {
    ssize_t r = ::recv(conn, got.data() + have, n - have, 0);
    if (r <= 0) return got.substr(0, have);
    have += static_cast<size_t>(r);
  }
  return got;
}

// A wait withdrawn as its keys came: the store owes the WAIT's STOP_WAITING and then
// answers the CANCEL_WAIT, both in one packet. The wait is answered, and the request
// after it reads its own answer, not the WAIT_CANCELED.
TEST(StoreOnLoop, AWaitWithdrawnAsItsKeysCameLeavesTheNextAnswerItsOwn) {
  SilentPeer peer;
  std::thread store([&] {
    int conn = ::accept(peer.fd, nullptr, nullptr);
    std::string hello = read_exactly(conn, 10);  // VALIDATE (op, magic), PING (op, nonce)
    ASSERT_EQ(hello.size(), 10u);
    ::send(conn, hello.data() + 6, 4, MSG_NOSIGNAL);  // the nonce back
    // WAIT: op, one key (count, length, "k")
    EXPECT_EQ(read_exactly(conn, 1 + 8 + 8 + 1).size(), 18u);
    EXPECT_EQ(read_exactly(conn, 1), std::string(1, '\x0c'));  // CANCEL_WAIT, at the timeout
    const char both[2] = {0, 1};  // STOP_WAITING, WAIT_CANCELED
    ::send(conn, both, sizeof(both), MSG_NOSIGNAL);
    // ADD: op, key (length, "n"), delta
    EXPECT_EQ(read_exactly(conn, 1 + 8 + 1 + 8).size(), 18u);
    int64_t seven = 7;
    ::send(conn, &seven, sizeof(seven), MSG_NOSIGNAL);
    read_exactly(conn, 1);  // until the client goes
    ::close(conn);
  });
  TcpStoreClient::Options o;
  o.timeout = 5s;
  TcpStoreClient client("127.0.0.1", peer.port, o, net::Socket());
  CancelSignal cancel;
  EXPECT_TRUE(run_task(wait_on_loop(client, {"k"}, 50ms, cancel))) << "the keys came";
  EXPECT_EQ(run_task(add_on_loop(client, "n", 1, cancel)), 7);
  client.drop();
  store.join();
}

// A wait that needs no values costs its WAIT alone; wait_for() reads them after it.
TEST(StoreOnLoop, AWaitWithoutValuesIsOneRequest) {
  TcpStoreServer server("127.0.0.1", 0);
  auto store = on_loop(std::make_unique<TcpStoreClient>("127.0.0.1", server.port()));
  CancelSignal cancel;
  run_task(store->set("k", "v", cancel));
  auto requests = [&server] {
    std::map<std::string, uint64_t> out;
    for (const auto& [op, n] : server.request_counts()) out[op] = n;
    return out;
  };
  auto before = requests();
  EXPECT_TRUE(run_task(store->wait_until_there({"k"}, 1s, cancel)));
  auto after = requests();
  EXPECT_EQ(after["wait"], before["wait"] + 1);
  EXPECT_EQ(after["multi_get"], before["multi_get"]) << "no values read";
  EXPECT_FALSE(run_task(store->wait_until_there({"absent"}, 20ms, cancel)));
  auto values = run_task(store->wait_for({"k"}, 1s, cancel));
  ASSERT_TRUE(values);
  EXPECT_EQ(*values, std::vector<std::string>{"v"});
}

// A peer that answers a string of more than the protocol allows: refused, not allocated.
TEST(StoreOnLoop, AMalformedAnswerIsRefusedAndTheConnectionDropped) {
  SilentPeer peer;
  std::thread answerer([&] {
    int conn = ::accept(peer.fd, nullptr, nullptr);
    char request[256];
    ASSERT_GT(::recv(conn, request, sizeof(request), 0), 0);
    uint64_t huge = uint64_t{1} << 40;
    ASSERT_EQ(::send(conn, &huge, sizeof(huge), MSG_NOSIGNAL), 8);
    char rest;
    ::recv(conn, &rest, 1, 0);  // until the client drops the connection
    ::close(conn);
  });
  TcpStoreClient client("127.0.0.1", peer.port, v113(5s));
  CancelSignal cancel;
  EXPECT_THROW(run_task(compare_set_on_loop(client, "k", "", "v", cancel)), StoreError);
  answerer.join();
}

}  // namespace
}  // namespace ddprun::store
