// etcd's requests as the agent's loop makes them (LoopStore over EtcdStore, real etcd
// on loopback ports): the same answers as the blocking store's, updates that lose
// nothing when loops and threads contend, and a member that stops answering holds
// nothing else on the loop up while a cancel ends the request at once.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <thread>

#include "common/coro.h"  // before Asio's other coroutine headers

#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include "common/loop_waits.h"
#include "store/etcd/etcd_store.h"
#include "store/loop_store.h"
#include "tests/helpers/etcd_cluster.h"
#include "tests/helpers/free_port.h"
#include "tests/helpers/run_task.h"

namespace ddprun::store {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;
using Values = std::vector<std::optional<std::string>>;

std::unique_ptr<EtcdStore> store_at(const std::string& endpoints, const std::string& prefix,
                                    std::chrono::milliseconds timeout = 10s) {
  return std::make_unique<EtcdStore>(
      std::make_unique<EtcdClient>(parse_etcd_endpoints(endpoints), timeout), prefix);
}

class EtcdOnLoopTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_ = new test::EtcdCluster(1); }
  static void TearDownTestSuite() { delete cluster_; }
  static std::string prefix() {
    return std::string("/loop/") +
           ::testing::UnitTest::GetInstance()->current_test_info()->name() + "/";
  }
  static test::EtcdCluster* cluster_;
};
test::EtcdCluster* EtcdOnLoopTest::cluster_ = nullptr;

TEST_F(EtcdOnLoopTest, RequestsAnswerAsTheBlockingStoreDoes) {
  auto loop = on_loop(store_at(cluster_->endpoints(), prefix()));
  auto blocking = store_at(cluster_->endpoints(), prefix());
  CancelSignal cancel;
  testing::run_task([&]() -> Task<void> {
    std::string key = "a";
    std::string value("x\0y", 3);
    co_await loop->set(key, value, cancel);
    std::vector<std::string> keys{"a", "missing"};
    Values got = co_await loop->get_now(keys, cancel);
    EXPECT_EQ(got, (Values{std::string("x\0y", 3), std::nullopt})) << "values are bytes";
    std::string counter = "n";
    EXPECT_EQ(co_await loop->add(counter, 5, cancel), 5) << "a missing counter starts at 0";
    EXPECT_EQ(co_await loop->add(counter, -2, cancel), 3);
    EXPECT_EQ(co_await loop->add(counter, 0, cancel), 3) << "adding 0 reads";
    std::string c = "c";
    std::string none;
    std::string first = "first";
    std::string second = "second";
    std::string x = "x";
    EXPECT_EQ(co_await loop->compare_set(c, none, first, cancel), "first");
    EXPECT_EQ(co_await loop->compare_set(c, first, second, cancel), "second");
    EXPECT_EQ(co_await loop->compare_set(c, first, x, cancel), "second")
        << "not equal: the current value";
    std::string d = "d";
    EXPECT_EQ(co_await loop->compare_set(d, x, second, cancel), "x")
        << "missing, expected not empty: unchanged";
  }());
  EXPECT_EQ(blocking->get_now("a"), std::string("x\0y", 3));
  EXPECT_EQ(blocking->add("n", 0), 3);
  EXPECT_EQ(blocking->get_now("c"), "second");
  EXPECT_FALSE(blocking->check({"d"}));
}

TEST_F(EtcdOnLoopTest, AddsFromLoopsAndThreadsTogetherLoseNothing) {
  constexpr int kEach = 25;
  asio::io_context io;
  std::vector<std::unique_ptr<LoopStore>> loops;
  CancelSignal cancel;
  for (int i = 0; i < 2; ++i) {
    loops.push_back(on_loop(store_at(cluster_->endpoints(), prefix())));
    asio::co_spawn(
        io,
        [&, store = loops.back().get()]() -> Task<void> {
          std::string key = "counter";
          for (int n = 0; n < kEach; ++n) co_await store->add(key, 1, cancel);
        },
        asio::detached);
  }
  std::thread blocking([&] {
    auto s = store_at(cluster_->endpoints(), prefix());
    for (int n = 0; n < kEach; ++n) s->add("counter", 1);
  });
  io.run();
  blocking.join();
  EXPECT_EQ(store_at(cluster_->endpoints(), prefix())->add("counter", 0), 3 * kEach);
}

// Nodes reaching a barrier together each count with their mark: every count is
// distinct, the last sees them all; a mark counted again counts once, and a mark set
// by a plain set (an agent that marks but does not count) counts too. (An ADD on a
// counter, a compare-and-set on etcd, would count the repeat twice and the plain mark
// not at all.)
TEST_F(EtcdOnLoopTest, CountsAtABarrierAreTheMarksUnderTheCounter) {
  constexpr int kNodes = 8;
  auto plain = store_at(cluster_->endpoints(), prefix());
  plain->set("done/0", "1");  // an agent that only marks itself
  asio::io_context io;
  std::vector<std::unique_ptr<LoopStore>> loops;
  std::vector<int64_t> counts;
  CancelSignal cancel;
  for (int i = 1; i < kNodes; ++i) {
    loops.push_back(on_loop(store_at(cluster_->endpoints(), prefix())));
    asio::co_spawn(
        io,
        [&, i, store = loops.back().get()]() -> Task<void> {
          std::string counter = "done";
          std::string mark = "done/" + std::to_string(i);
          counts.push_back(co_await store->count_in(counter, mark, cancel));
        },
        asio::detached);
  }
  io.run();
  std::sort(counts.begin(), counts.end());
  EXPECT_EQ(counts, (std::vector<int64_t>{2, 3, 4, 5, 6, 7, 8}));
  testing::run_task([&]() -> Task<void> {
    std::string counter = "done";
    std::string again = "done/3";
    EXPECT_EQ(co_await loops[0]->count_in(counter, again, cancel), kNodes)
        << "a mark counted again counts once";
    std::string outside = "elsewhere/1";
    EXPECT_THROW(co_await loops[0]->count_in(counter, outside, cancel), StoreError);
  }());
  EXPECT_EQ(plain->get_now("done/5"), "1");
}

// The member stops (SIGSTOP): it keeps the connection open and says nothing. The
// request waits as the loop's completion, so the loop's other work goes on, and a
// cancel ends the request there and then. (A request that blocked the loop would let
// no tick through before it gave up on its own, with a StoreError.)
TEST(EtcdOnLoop, AFrozenMemberHoldsNothingElseUpAndACancelEndsTheRequest) {
  test::EtcdCluster cluster(1);
  auto loop = on_loop(store_at(cluster.endpoints(), "/frozen/", 60s));
  CancelSignal warm;
  std::string key = "k";
  std::string value = "v";
  testing::run_task(loop->set(key, value, warm));  // connected
  cluster.signal(0, SIGSTOP);

  asio::io_context io;
  CancelSignal cancel("cancelled by the test");
  int ticks = 0;
  std::string outcome;
  asio::co_spawn(
      io,
      [&]() -> Task<void> {
        try {
          std::vector<std::string> keys{"k"};
          co_await loop->get_now(keys, cancel);
          outcome = "answered";
        } catch (const StoreError& e) {
          outcome = std::string("store error: ") + e.what();
        } catch (const Error& e) {
          outcome = e.what();
        }
      },
      asio::detached);
  asio::co_spawn(
      io,
      [&]() -> Task<void> {
        CancelSignal never;
        while (ticks < 5) {
          co_await sleep_for(20ms, never);
          ++ticks;
        }
        cancel.cancel();
      },
      asio::detached);
  io.run();
  cluster.signal(0, SIGCONT);
  EXPECT_EQ(ticks, 5);
  EXPECT_EQ(outcome, "cancelled by the test");
  CancelSignal after;
  std::vector<std::string> keys{"k"};
  EXPECT_EQ(testing::run_task(loop->get_now(keys, after)), (Values{std::string("v")}))
      << "the next request connects again";
}

TEST(EtcdOnLoop, AnUnreachableEtcdNamesEveryEndpointTried) {
  std::string a = "127.0.0.1:" + std::to_string(test::free_port());
  std::string b = "127.0.0.1:" + std::to_string(test::free_port());
  auto loop = on_loop(store_at(a + "," + b, "/x/", 1500ms));
  CancelSignal cancel;
  std::string key = "k";
  std::string value = "v";
  try {
    testing::run_task(loop->set(key, value, cancel));
    FAIL() << "no etcd there";
  } catch (const StoreError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("cannot reach etcd"), std::string::npos) << what;
    EXPECT_NE(what.find(a), std::string::npos) << what;
    EXPECT_NE(what.find(b), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace ddprun::store
