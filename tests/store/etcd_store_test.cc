// The Store interface over real etcd (Debian's etcd-server on loopback ports):
// semantics, waits that wake, compare-and-set under contention, failover between
// members, and clear errors for an unreachable etcd, a wrong API and required auth.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "store/etcd/etcd_store.h"
#include "tests/helpers/etcd_cluster.h"
#include "tests/helpers/run_task.h"
#include "tests/helpers/free_port.h"

namespace ddprun::store {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<EtcdStore> store_at(const std::string& endpoints, const std::string& prefix,
                                    std::chrono::milliseconds timeout = 10s) {
  return std::make_unique<EtcdStore>(
      std::make_unique<EtcdClient>(parse_etcd_endpoints(endpoints), timeout), prefix);
}

class EtcdStoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_ = new test::EtcdCluster(1); }
  static void TearDownTestSuite() { delete cluster_; }
  std::unique_ptr<EtcdStore> store() {
    return store_at(
        cluster_->endpoints(),
        std::string("/t/") + ::testing::UnitTest::GetInstance()->current_test_info()->name() + "/");
  }
  static test::EtcdCluster* cluster_;
};
test::EtcdCluster* EtcdStoreTest::cluster_ = nullptr;

TEST_F(EtcdStoreTest, KeyValueSemanticsMatchTheOtherStores) {
  auto s = store();
  s->set("a", std::string("x\0y", 3));
  EXPECT_EQ(s->get("a", 1s), std::string("x\0y", 3)) << "values are bytes";
  EXPECT_EQ(s->add("n", 5), 5) << "a missing counter starts at 0";
  EXPECT_EQ(s->add("n", -2), 3);
  EXPECT_EQ(s->compare_set("c", "", "first"), "first") << "missing and empty expected";
  EXPECT_EQ(s->compare_set("d", "x", "y"), "x") << "missing, expected not empty: unchanged";
  EXPECT_FALSE(s->check({"d"}));
  EXPECT_EQ(s->compare_set("c", "first", "second"), "second");
  EXPECT_EQ(s->compare_set("c", "first", "third"), "second") << "not equal: the current value";
  EXPECT_TRUE(s->check({"a", "n", "c"}));
  s->append("log", "ab");
  s->append("log", "cd");
  EXPECT_EQ(s->get("log", 1s), "abcd");
  EXPECT_EQ(s->multi_get({"a", "c"}, 1s)[1], "second");
  EXPECT_EQ(s->num_keys(), 4);
  EXPECT_TRUE(s->delete_key("a"));
  EXPECT_FALSE(s->delete_key("a"));
  EXPECT_THROW(s->get("never", 200ms), TimeoutError);
}

TEST_F(EtcdStoreTest, WaitWakesWhenTheLastKeyIsSet) {
  auto waiter = store();
  auto writer = store();
  std::atomic<bool> woke{false};
  std::thread t([&] {
    waiter->wait({"round/3/done/0", "round/3/done/1"}, 30s);
    woke = true;
  });
  writer->set("round/3/done/1", "1");
  writer->set("round/3/other", "1");
  EXPECT_FALSE(woke.load()) << "one key is still missing";
  writer->set("round/3/done/0", "1");
  t.join();
  EXPECT_TRUE(woke.load());
}

TEST_F(EtcdStoreTest, WaitsForKeysNewerThanARevisionWatchFromThere) {
  std::string prefix = "/t/newer/";
  auto writer = store_at(cluster_->endpoints(), prefix);
  writer->set("mark", "1");
  int64_t revision = writer->client().range(prefix + "mark").kvs.at(0).mod_revision;
  writer->set("round/1/over", "restart|1|why");  // after the revision: replayed
  auto waiter = std::make_unique<EtcdStore>(
      std::make_unique<EtcdClient>(parse_etcd_endpoints(cluster_->endpoints()), 10s), prefix,
      revision);
  EXPECT_EQ(waiter->multi_get({"round/1/over"}, 5s)[0], "restart|1|why");
  std::thread t([&] {
    EXPECT_EQ(waiter->multi_get({"round/1/done/0", "round/1/done/1"}, 30s),
              (std::vector<std::string>{"a", "b"}));
  });
  writer->set("round/1/done/1", "b");
  writer->set("round/1/done/0", "a");
  t.join();
}

TEST_F(EtcdStoreTest, WaitsFromACompactedRevisionReadInstead) {
  std::string prefix = "/t/compacted/";
  auto writer = store_at(cluster_->endpoints(), prefix);
  writer->set("early", "1");
  int64_t old = writer->client().range(prefix + "early").kvs.at(0).mod_revision;
  writer->set("round/2/over", "final|1|why");
  writer->set("later", "1");
  int64_t now = writer->client().range(prefix + "later").kvs.at(0).mod_revision;
  writer->client().call("/v3/kv/compaction", {{"revision", std::to_string(now)}});
  auto waiter = std::make_unique<EtcdStore>(
      std::make_unique<EtcdClient>(parse_etcd_endpoints(cluster_->endpoints()), 10s), prefix, old);
  EXPECT_EQ(waiter->multi_get({"round/2/over"}, 5s)[0], "final|1|why");
}

TEST_F(EtcdStoreTest, ConcurrentAddsAndCompareSetsLoseNothing) {
  constexpr int kEach = 40;
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      auto s = store();
      for (int i = 0; i < kEach; ++i) s->add("counter", 1);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(store()->add("counter", 0), 3 * kEach);
}

TEST_F(EtcdStoreTest, InterruptEndsABlockedWait) {
  auto s = store();
  std::thread t([&] { EXPECT_THROW(s->wait({"never"}, 60s), StoreError); });
  std::this_thread::sleep_for(100ms);  // let it block (the assertion holds either way)
  s->interrupt();
  t.join();
}

TEST(EtcdCluster, CallsAndWaitsFailOverWhenAMemberDies) {
  test::EtcdCluster cluster(3);
  auto s = store_at(cluster.endpoints(), "/failover/");
  auto writer = store_at(cluster.endpoints(), "/failover/");
  s->set("before", "1");
  std::thread waiter([&] { EXPECT_EQ(s->get("after", 30s), "2"); });
  std::this_thread::sleep_for(200ms);  // the wait is on member 0 (either way it must work)
  cluster.kill(0);
  writer->set("after", "2");
  waiter.join();
  EXPECT_EQ(s->add("n", 7), 7);
  EXPECT_EQ(writer->get("before", 5s), "1");
}

TEST(EtcdErrors, UnreachableNamesEveryEndpointTried) {
  std::string a = "127.0.0.1:" + std::to_string(test::free_port());
  std::string b = "127.0.0.1:" + std::to_string(test::free_port());
  auto s = store_at(a + "," + b, "/x/", 1500ms);
  try {
    s->set("k", "v");
    FAIL() << "no etcd there";
  } catch (const StoreError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("cannot reach etcd"), std::string::npos) << what;
    EXPECT_NE(what.find(a), std::string::npos) << what;
    EXPECT_NE(what.find(b), std::string::npos) << what;
  }
}

// etcd's gateway answers a lease that is gone (expired, revoked) with HTTP 404 and the
// error as JSON: that error is said, not taken for an etcd without the v3 API (1,024
// agents whose leases expired under etcd's load logged "does not serve /v3/lease/revoke").
TEST_F(EtcdStoreTest, ALeaseThatIsGoneIsSaidSoNotAMissingApi) {
  EtcdClient client(parse_etcd_endpoints(cluster_->endpoints()), 10s);
  CancelSignal cancel;
  try {
    testing::run_task([&]() -> Task<bool> {
      co_await client.revoke_lease_on_loop(0x7eadbeef, cancel);
      co_return true;
    }());
    FAIL() << "no such lease";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("lease not found"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("does not serve"), std::string::npos) << e.what();
  }
}

// An HTTP server that knows no /v3 API (an etcd older than 3.4, or not etcd at all).
TEST(EtcdErrors, WrongApiSaysSo) {
  int port = 0;
  int fd = ddprun::test::listen_on_loopback(port);
  ASSERT_GE(fd, 0);
  std::thread server([fd] {
    int c = ::accept(fd, nullptr, nullptr);
    char buf[4096];
    (void)!::read(c, buf, sizeof(buf));
    std::string reply = "HTTP/1.1 404 Not Found\r\nContent-Length: 19\r\n\r\n404 page not found\n";
    (void)!::write(c, reply.data(), reply.size());
    ::close(c);
  });
  auto s = store_at("127.0.0.1:" + std::to_string(port), "/x/", 5s);
  try {
    s->set("k", "v");
    FAIL() << "not an etcd v3 API";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("does not serve /v3/kv/put (HTTP 404)"), std::string::npos)
        << e.what();
  }
  server.join();
  ::close(fd);
}

TEST(EtcdErrors, RequiredAuthenticationSaysSo) {
  test::EtcdCluster cluster(1);
  std::string etcdctl = "ETCDCTL_API=3 etcdctl --endpoints=" + cluster.endpoints();
  ASSERT_EQ(std::system((etcdctl + " user add root:secret >/dev/null 2>&1").c_str()), 0);
  ASSERT_EQ(std::system((etcdctl + " auth enable >/dev/null 2>&1").c_str()), 0);
  auto s = store_at(cluster.endpoints(), "/x/", 5s);
  EXPECT_THROW(s->set("k", "v"), EtcdAuthError);
}

}  // namespace
}  // namespace ddprun::store
