// The server under hostile input: garbage, truncated frames and thousands of
// connections must never disturb the well-behaved clients.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <atomic>
#include <cerrno>
#include <future>
#include <memory>
#include <random>
#include <thread>

#include "store/tcpstore/tcp_store_client.h"
#include "store/tcpstore/tcp_store_server.h"
#include "tests/helpers/run_task.h"
#include "tests/helpers/threads.h"
#include "tests/store/raw_connection.h"

namespace ddprun::test {
namespace {

using store::TcpStoreClient;
using store::TcpStoreServer;

// A single node's store stops as its job ends, before it is destroyed: its thread
// ends meanwhile, and the destructor has nothing to wait for.
TEST(Robustness, StopEndsTheServersThreadBeforeItsDestruction) {
  TcpStoreServer server("127.0.0.1", 0);
  ASSERT_EQ(test::await_thread_count(1, "ddprun-store"), 1) << "its thread names itself";
  server.stop();
  EXPECT_EQ(test::await_thread_count(0, "ddprun-store"), 0);
}

TEST(Robustness, GarbageAndTruncatedFramesDoNotDisturbOthers) {
  TcpStoreServer server{"127.0.0.1", 0};
  std::atomic<bool> stop{false};
  std::thread attacker([&] {
    std::mt19937 rng(42);
    std::uniform_int_distribution<int> byte(0, 255);
    for (int i = 0; i < 300 && !stop; ++i) {
      RawConnection c(server.port());
      std::string junk;
      if (i % 3 == 0) {
        // A valid frame cut short.
        std::string frame = Wire(Numbering::kV113, Op::kSet).str("key").str("value").bytes;
        junk = frame.substr(0, 1 + rng() % (frame.size() - 1));
      } else {
        size_t n = 1 + rng() % 200;
        for (size_t j = 0; j < n; ++j) junk += static_cast<char>(byte(rng));
      }
      c.send(junk);
    }
  });
  TcpStoreClient good("127.0.0.1", server.port());
  for (int i = 0; i < 500; ++i) {
    std::string key = std::to_string(i).insert(0, 1, 'k');
    std::string value = std::to_string(i).insert(0, 1, 'v');
    good.set(key, value);
    ASSERT_EQ(good.add("counter", 1), i + 1);
    ASSERT_EQ(good.get(key, std::chrono::seconds(5)), value);
  }
  stop = true;
  attacker.join();
  EXPECT_EQ(good.add("counter", 0), 500);
}

TEST(Robustness, ThousandsOfConnectionsAllAnswered) {
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);
  const int n = static_cast<int>(std::min<rlim_t>(3000, lim.rlim_cur / 2 - 100));
  TcpStoreServer server{"127.0.0.1", 0};
  std::vector<RawConnection> conns;
  conns.reserve(n);
  for (int i = 0; i < n; ++i) conns.emplace_back(server.port());
  for (auto& c : conns) c.send(Wire(Numbering::kV113, Op::kAdd).str("n").put<int64_t>(1).bytes);
  std::vector<int64_t> seen;
  for (auto& c : conns) seen.push_back(c.read_scalar<int64_t>().value_or(-1));
  std::sort(seen.begin(), seen.end());
  for (int i = 0; i < n; ++i) ASSERT_EQ(seen[i], i + 1);
  EXPECT_EQ(server.connection_count(), static_cast<size_t>(n));
}

// Workers often set a key and exit: the request and the close arrive together, and the
// server both takes the request and lets the connection go (a session left open per
// such client runs a long job's store out of descriptors). A session that only waited
// for epoll's next edge after reading the request would never learn of that close.
TEST(Robustness, ClientThatSetsAndClosesAtOnceIsLetGo) {
  TcpStoreServer server{"127.0.0.1", 0};
  constexpr int kClients = 500;
  std::vector<std::unique_ptr<RawConnection>> clients;
  for (int i = 0; i < kClients; ++i) {  // each served once: its session waits for more
    clients.push_back(std::make_unique<RawConnection>(server.port()));
    clients.back()->send(Wire(Numbering::kV113, Op::kAdd).str("n").put<int64_t>(1).bytes);
    ASSERT_TRUE(clients.back()->read_scalar<int64_t>());
  }
  // Every request and its close arrive while the server's thread is busy.
  std::promise<void> busy_now;
  std::thread busy([&server, &busy_now] {
    server.edit_keys([&busy_now](store::KeyValueTable&) {
      busy_now.set_value();
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      return size_t{0};
    });
  });
  busy_now.get_future().wait();
  for (int i = 0; i < kClients; ++i) {
    clients[i]->send(Wire(Numbering::kV113, Op::kSet).str("k" + std::to_string(i)).str("v").bytes);
    clients[i].reset();  // closed right after its request
  }
  busy.join();
  TcpStoreClient good("127.0.0.1", server.port());
  for (int i = 0; i < kClients; ++i) {
    ASSERT_EQ(good.get("k" + std::to_string(i), std::chrono::seconds(5)), "v") << i;
  }
  CancelSignal cancel;
  testing::run_task(server.connections_at_most(1, std::chrono::seconds(10), cancel));
  EXPECT_EQ(server.connection_count(), 1u) << "only the client still connected";
}

TEST(Robustness, ClientThatNeverReadsIsCutOff) {
  TcpStoreServer server{"127.0.0.1", 0};
  RawConnection hog(server.port());
  std::string big(8 * 1024 * 1024, 'x');
  hog.send(Wire(Numbering::kV113, Op::kSet).str("big").str(big).bytes);
  // Ask for the 8 MiB value over and over without reading a byte.
  std::string get = Wire(Numbering::kV113, Op::kGet).str("big").bytes;
  for (int i = 0; i < 20; ++i) hog.send(get);
  TcpStoreClient good("127.0.0.1", server.port());
  EXPECT_EQ(good.add("alive", 1), 1);
  EXPECT_TRUE(hog.drains_to_eof());
}

}  // namespace
}  // namespace ddprun::test

namespace ddprun::test {
namespace {

// The server runs in a child whose descriptor limit is tiny; the clients live here.
TEST(Robustness, OutOfDescriptorsPausesAcceptingWithoutSpinning) {
  int port_pipe[2];
  int quit_pipe[2];
  int err_pipe[2];
  ASSERT_EQ(::pipe(port_pipe), 0);
  ASSERT_EQ(::pipe(quit_pipe), 0);
  ASSERT_EQ(::pipe(err_pipe), 0);
  pid_t child = ::fork();
  if (child == 0) {
    ::dup2(err_pipe[1], 1);  // spdlog's default logger writes to stdout
    ::dup2(err_pipe[1], 2);
    for (int fd = 3; fd < 1024; ++fd)
      if (fd != port_pipe[1] && fd != quit_pipe[0]) ::close(fd);
    rlimit lim{40, 40};
    ::setrlimit(RLIMIT_NOFILE, &lim);
    {
      store::TcpStoreServer server("127.0.0.1", 0);
      int port = server.port();
      if (::write(port_pipe[1], &port, sizeof(port)) != sizeof(port)) ::_exit(1);
      char c;  // serves until the test writes or closes its end
      while (::read(quit_pipe[0], &c, 1) < 0 && errno == EINTR) {
      }
    }
    ::_exit(0);
  }
  ::close(port_pipe[1]);
  ::close(quit_pipe[0]);
  ::close(err_pipe[1]);
  int port = 0;
  ASSERT_EQ(::read(port_pipe[0], &port, sizeof(port)), static_cast<ssize_t>(sizeof(port)));

  std::vector<std::unique_ptr<RawConnection>> conns;
  const int kClients = 45;  // the child can hold about 30
  for (int i = 0; i < kClients; ++i) {
    conns.push_back(std::make_unique<RawConnection>(port));
    conns.back()->send(Wire(Numbering::kV113, Op::kAdd).str("n").put<int64_t>(1).bytes);
  }
  // Some are served at once; the rest wait in the backlog.
  int served = 0;
  std::vector<bool> answered;
  for (auto& c : conns) {
    answered.push_back(c->read_scalar<int64_t>(100).has_value());
    served += answered.back() ? 1 : 0;
  }
  EXPECT_GT(served, 0);
  EXPECT_LT(served, kClients);
  // Freeing descriptors lets the waiting ones in.
  for (int i = 0; i < kClients; ++i)
    if (answered[i]) conns[i].reset();
  int late = 0;
  for (int i = 0; i < kClients; ++i) {
    if (!answered[i] && conns[i]->read_scalar<int64_t>(5000).has_value()) ++late;
  }
  EXPECT_EQ(late, kClients - served) << "accepting did not resume for everyone";
  ::close(quit_pipe[1]);
  int status = 0;
  ::waitpid(child, &status, 0);
  std::string err;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(err_pipe[0], buf, sizeof(buf))) > 0) err.append(buf, n);
  size_t warnings = 0;
  for (size_t pos = 0; (pos = err.find("cannot accept", pos)) != std::string::npos; ++pos) {
    ++warnings;
  }
  EXPECT_GE(warnings, 1u) << "server output: " << err << " status " << status;
  EXPECT_LE(warnings, 5u) << "one warning per episode, not one per retry";
}

}  // namespace
}  // namespace ddprun::test
