// KeyWaiter on real etcd (Debian's etcd-server on loopback ports): the wait is a watch
// stream read on the event loop, with no thread, and it survives its member dying or
// freezing.
#include <signal.h>

#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>

#include "rendezvous/round/key_waiter.h"
#include "store/etcd/etcd_store.h"
#include "tests/helpers/etcd_cluster.h"
#include "tests/helpers/threads.h"

namespace ddprun::rendezvous {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<store::EtcdStore> store_at(const std::string& endpoints,
                                    std::chrono::milliseconds timeout = 10s) {
  return std::make_unique<store::EtcdStore>(
      std::make_unique<store::EtcdClient>(store::parse_etcd_endpoints(endpoints), timeout), "/kw/");
}

/// A waiter on `keys` whose answer (values or error) the test reads after run().
class Waiting {
 public:
  Waiting(std::unique_ptr<store::EtcdStore> store, std::vector<std::string> keys)
      : waiter_(std::make_unique<KeyWaiter>(
            io_, on_loop(std::move(store)), std::move(keys),
            [this](std::vector<std::string> v) {
              values_ = std::move(v);
              io_.stop();
            },
            [this](std::string e) {
              error_ = std::move(e);
              io_.stop();
            })) {}

  /// Runs the loop until the answer, at most `limit`.
  void run(std::chrono::seconds limit = 30s) {
    io_.restart();
    io_.run_for(limit);
  }
  void poll() {
    io_.restart();
    io_.poll();
  }
  void cancel() { waiter_.reset(); }
  const std::optional<std::vector<std::string>>& values() const { return values_; }
  const std::string& error() const { return error_; }

 private:
  boost::asio::io_context io_;
  std::optional<std::vector<std::string>> values_;
  std::string error_;
  std::unique_ptr<KeyWaiter> waiter_;
};

TEST(EtcdKeyWaiter, WaitsOnTheLoopWithoutAThreadAndHandsOverTheValues) {
  test::EtcdCluster cluster(1);
  auto writer = store_at(cluster.endpoints());
  writer->set("first", "1");
  int before = test::thread_count();
  Waiting w(store_at(cluster.endpoints()), {"first", "second"});
  w.poll();
  EXPECT_EQ(test::thread_count(), before) << "no thread per wait";
  EXPECT_FALSE(w.values());
  writer->set("second", "2");
  w.run();
  ASSERT_TRUE(w.values()) << w.error();
  EXPECT_EQ(*w.values(), (std::vector<std::string>{"1", "2"}));
}

TEST(EtcdKeyWaiter, KeysAlreadyThereAnswerAtOnceAndACancelledWaitNever) {
  test::EtcdCluster cluster(1);
  auto writer = store_at(cluster.endpoints());
  writer->set("here", "x");
  Waiting present(store_at(cluster.endpoints()), {"here"});
  present.run(5s);
  ASSERT_TRUE(present.values()) << present.error();
  EXPECT_EQ(present.values()->at(0), "x");

  Waiting cancelled(store_at(cluster.endpoints()), {"later"});
  cancelled.poll();
  cancelled.cancel();
  writer->set("later", "y");
  cancelled.run(1s);
  EXPECT_FALSE(cancelled.values());
  EXPECT_TRUE(cancelled.error().empty());
}

// A waiter told its keys are newer than a revision etcd has compacted since reads them
// instead of watching from there.
TEST(EtcdKeyWaiter, AWaitFromACompactedRevisionReadsInstead) {
  test::EtcdCluster cluster(1);
  auto writer = store_at(cluster.endpoints());
  writer->set("early", "1");
  int64_t old = writer->client().range("/kw/early").kvs.at(0).mod_revision;
  writer->set("over", "final|1|why");
  writer->set("later", "1");
  int64_t now = writer->client().range("/kw/later").kvs.at(0).mod_revision;
  writer->client().call("/v3/kv/compaction", {{"revision", std::to_string(now)}});
  Waiting w(std::make_unique<store::EtcdStore>(
                std::make_unique<store::EtcdClient>(store::parse_etcd_endpoints(cluster.endpoints()), 10s),
                "/kw/", old),
            {"over"});
  w.run(10s);
  ASSERT_TRUE(w.values()) << w.error();
  EXPECT_EQ(w.values()->at(0), "final|1|why");
}

// A frozen member keeps its connections open and says nothing: the silent stream is
// caught up with by a read, which moves on to a member that answers. A member that
// dies breaks the stream: the watch moves on. (One cluster for both: three members
// take a while to start on a loaded machine.)
TEST(EtcdKeyWaiter, TheWaitMovesOnWhenItsMemberFreezesOrDies) {
  test::EtcdCluster cluster(3);
  Waiting frozen(store_at(cluster.endpoints(), 2s), {"late"});  // watching on member 0
  frozen.poll();
  cluster.signal(0, SIGSTOP);
  store_at(cluster.endpoints(), 5s)->set("late", "1");
  frozen.run();
  cluster.signal(0, SIGCONT);
  ASSERT_TRUE(frozen.values()) << frozen.error();
  EXPECT_EQ(frozen.values()->at(0), "1");

  Waiting dead(store_at(cluster.endpoints()), {"after"});
  dead.poll();
  cluster.kill(0);
  store_at(cluster.endpoints())->set("after", "2");
  dead.run();
  ASSERT_TRUE(dead.values()) << dead.error();
  EXPECT_EQ(dead.values()->at(0), "2");
}

}  // namespace
}  // namespace ddprun::rendezvous
