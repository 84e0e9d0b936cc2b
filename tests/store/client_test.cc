// ddprun's C++ store client against ddprun's server, and the Store semantics shared
// by MemoryStore and PrefixStore (ranks as threads).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "store/memory_store.h"
#include "store/prefix_store.h"
#include "store/tcpstore/tcp_store_client.h"
#include "store/tcpstore/tcp_store_server.h"

namespace ddprun::test {
namespace {

using namespace store;
using namespace std::chrono_literals;

// The same checks run against every Store implementation.
void exercise(store::Store& s) {
  s.set("a", std::string("x\0y", 3));
  EXPECT_EQ(s.get("a", 1s), std::string("x\0y", 3));
  EXPECT_EQ(s.add("n", 5), 5);
  EXPECT_EQ(s.add("n", -2), 3);
  EXPECT_EQ(s.get("n", 1s), "3");
  EXPECT_EQ(s.compare_set("c", "", "first"), "first");
  EXPECT_EQ(s.compare_set("c", "wrong", "second"), "first");
  EXPECT_EQ(s.compare_set("c", "first", "second"), "second");
  EXPECT_EQ(s.compare_set("missing", "x", "y"), "x");
  EXPECT_TRUE(s.check({"a", "n"}));
  EXPECT_FALSE(s.check({"a", "missing"}));
  s.multi_set({"m1", "m2"}, {"1", "2"});
  EXPECT_EQ(s.multi_get({"m2", "m1"}, 1s), (std::vector<std::string>{"2", "1"}));
  s.append("log", "ab");
  s.append("log", "cd");
  EXPECT_EQ(s.get("log", 1s), "abcd");
  EXPECT_TRUE(s.delete_key("log"));
  EXPECT_FALSE(s.delete_key("log"));
  EXPECT_THROW(s.wait({"never"}, 100ms), TimeoutError);
  s.set("after_timeout", "ok");  // the store is still usable after a timed-out wait
  EXPECT_EQ(s.get("after_timeout", 1s), "ok");
}

void ranks_as_threads(store::Store& s) {
  std::vector<std::thread> ranks;
  std::vector<std::string> seen(4);
  for (int r = 0; r < 4; ++r) {
    ranks.emplace_back([&, r] {
      s.set("rank/" + std::to_string(r), "hello from " + std::to_string(r));
      s.add("arrived", 1);
      s.wait({"rank/0", "rank/1", "rank/2", "rank/3"}, 5s);
      seen[r] = s.get("rank/" + std::to_string((r + 1) % 4), 1s);
    });
  }
  for (auto& t : ranks) t.join();
  for (int r = 0; r < 4; ++r) EXPECT_EQ(seen[r], "hello from " + std::to_string((r + 1) % 4));
  EXPECT_EQ(s.add("arrived", 0), 4);
}

TEST(MemoryStore, Semantics) {
  store::MemoryStore s;
  exercise(s);
  ranks_as_threads(s);
  EXPECT_THROW(s.add("a", 1), StoreError) << "not a number";
}

// Several keys read at once are read as one request reads them on a real store (a
// TCPStore's MULTI_GET, an etcd transaction): a writer on another thread is seen
// entirely or not at all. (Read one by one, the rendezvous' head could be read without
// its key yet with the version its writer set next, which a real store never shows.)
TEST(MemoryStore, SeveralKeysAreReadAtOnce) {
  store::MemoryStore s;
  s.multi_set({"a", "b"}, {"0", "0"});
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 1; !done; ++i) s.multi_set({"a", "b"}, {std::to_string(i), std::to_string(i)});
  });
  int torn = 0;
  for (int i = 0; i < 100'000; ++i) {
    auto got = s.get_now(std::vector<std::string>{"a", "b"});
    torn += got.at(0) != got.at(1) ? 1 : 0;
  }
  done = true;
  writer.join();
  EXPECT_EQ(torn, 0) << "reads that saw one key of a write and not the other";
}

TEST(PrefixStore, IsolatesKeys) {
  store::MemoryStore inner;
  store::PrefixStore a("attempt_0", inner);
  store::PrefixStore b("attempt_1", inner);
  exercise(a);
  a.set("shared_name", "a");
  b.set("shared_name", "b");
  EXPECT_EQ(a.get("shared_name", 1s), "a");
  EXPECT_EQ(inner.get("attempt_1/shared_name", 1s), "b");
}

TEST(TcpStoreClient, AgainstDdprunServer) {
  store::TcpStoreServer server{"127.0.0.1", 0};
  store::TcpStoreClient client("127.0.0.1", server.port());
  exercise(client);
  EXPECT_EQ(client.ping(1234), 1234u);
  EXPECT_EQ(client.num_keys(), 6);  // a n c m1 m2 after_timeout
}

// Agents measure their clock's offset to the rendezvous host by this key: every way of
// reading it gives the server's wall clock now, and it is never stored.
TEST(TcpStoreServer, AnswersItsWallClockKeyWithItsClock) {
  store::TcpStoreServer server{"127.0.0.1", 0};
  store::TcpStoreClient client("127.0.0.1", server.port());
  auto wall = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  const std::string key = tcpstore::kWallClockKey;
  int64_t before = wall();
  int64_t by_get = std::stoll(client.get(key, 1s));
  auto now = client.get_now(key);
  ASSERT_TRUE(now.has_value());
  int64_t by_get_now = std::stoll(*now);
  int64_t by_multi = std::stoll(client.multi_get({key}, 1s).at(0));
  int64_t after = wall();
  for (int64_t t : {by_get, by_get_now, by_multi}) {
    EXPECT_GE(t, before);
    EXPECT_LE(t, after);
  }
  EXPECT_EQ(client.num_keys(), 0) << "not stored";
}

TEST(TcpStoreClient, WaitWakesAcrossClients) {
  store::TcpStoreServer server{"", 0};
  store::TcpStoreClient waiter("localhost", server.port());
  std::thread setter([&] {
    store::TcpStoreClient c("127.0.0.1", server.port());
    std::this_thread::sleep_for(20ms);
    c.set("go", "1");
  });
  EXPECT_EQ(waiter.get("go", 5s), "1");
  setter.join();
}

TEST(TcpStoreClient, Numbering113AgainstDdprunServer) {
  store::TcpStoreServer server{"127.0.0.1", 0};
  store::TcpStoreClient::Options o;
  o.numbering = store::tcpstore::Numbering::kV113;
  store::TcpStoreClient client("127.0.0.1", server.port(), o);
  client.set("k", "v");
  EXPECT_EQ(client.get("k", 1s), "v");
  EXPECT_EQ(client.add("n", 2), 2);
  EXPECT_THROW(client.wait({"never"}, 100ms), TimeoutError);
  EXPECT_EQ(client.add("n", 1), 3) << "reconnected after the uncancellable wait";
  EXPECT_THROW(client.append("k", "x"), StoreError) << "1.13 has no APPEND";
}

TEST(TcpStoreClient, RanksAsThreadsEachWithAClient) {
  store::TcpStoreServer server{"127.0.0.1", 0};
  store::TcpStoreClient shared("127.0.0.1", server.port());
  // A client owns one connection, so each rank (thread) has its own.
  std::vector<std::thread> ranks;
  for (int r = 0; r < 8; ++r) {
    ranks.emplace_back([&, r] {
      store::TcpStoreClient c("127.0.0.1", server.port());
      c.set("r" + std::to_string(r), std::to_string(r));
      c.wait({"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"}, 5s);
    });
  }
  for (auto& t : ranks) t.join();
  EXPECT_EQ(shared.num_keys(), 8);
}

TEST(TcpStoreClient, ConnectTimeoutNamesTheAddress) {
  store::TcpStoreClient::Options o;
  o.timeout = 200ms;
  int port = 0;
  {
    store::TcpStoreServer gone{"127.0.0.1", 0};
    port = gone.port();
  }
  try {
    store::TcpStoreClient c("127.0.0.1", port, o);
    FAIL() << "connected to a closed port";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos)
        << e.what();
  }
}

TEST(TcpStoreClient, LostServerIsAStoreErrorNamingTheAddress) {
  auto server = std::make_unique<store::TcpStoreServer>("127.0.0.1", 0);
  int port = server->port();
  store::TcpStoreClient::Options o;
  o.timeout = 500ms;
  store::TcpStoreClient c("127.0.0.1", port, o);
  c.set("k", "v");
  server.reset();
  try {
    c.add("k2", 1);
    c.add("k2", 1);
    FAIL() << "no error after the server went away";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(port)), std::string::npos) << e.what();
  }
}

TEST(TcpStoreServer, ClearExceptKeepsOnlyThePrefix) {
  store::TcpStoreServer server{"127.0.0.1", 0};
  store::TcpStoreClient c("127.0.0.1", server.port());
  c.set("ddprun/agent", "1");
  c.set("/default_pg/0", "x");
  c.set("init/", "2");
  ASSERT_EQ(c.num_keys(), 3);  // a round trip: SET has no reply, so wait until all landed
  EXPECT_EQ(server.clear_except("ddprun/"), 2u);
  EXPECT_EQ(c.num_keys(), 1);
  EXPECT_TRUE(c.check({"ddprun/agent"}));
}

TEST(TcpStoreServer, BusyPortIsAClearError) {
  store::TcpStoreServer first{"127.0.0.1", 0};
  try {
    store::TcpStoreServer second{"127.0.0.1", first.port()};
    FAIL();
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(first.port())), std::string::npos);
  }
}

}  // namespace
}  // namespace ddprun::test
