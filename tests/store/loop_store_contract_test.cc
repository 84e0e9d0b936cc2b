// One contract for every store the agent's loop uses (LoopStore): the in-memory store
// of unit tests, a TCPStore client against ddprun's server, and etcd (real, on
// loopback). The same cases run over each, so a store that answers differently from
// the others, or an operation that one of them forgets, fails here by name. (Torch's own
// TCPStore server is checked against ddprun's in conformance_test.cc and the torch
// suite; the loop speaks its 2.x protocol, which only torch 2's server has.)
#include <gtest/gtest.h>

#include "common/coro.h"  // before Asio's other coroutine headers

#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include "common/loop_waits.h"
#include "store/etcd/etcd_store.h"
#include "store/loop_store.h"
#include "store/memory_store.h"
#include "store/tcpstore/tcp_store_client.h"
#include "store/tcpstore/tcp_store_server.h"
#include "tests/helpers/etcd_cluster.h"
#include "tests/helpers/run_task.h"

namespace ddprun::store {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;
using Values = std::vector<std::optional<std::string>>;

enum class Kind { kMemory, kTcpStore, kEtcd };

std::string kind_name(const ::testing::TestParamInfo<Kind>& info) {
  switch (info.param) {
    case Kind::kMemory:
      return "Memory";
    case Kind::kTcpStore:
      return "TcpStore";
    case Kind::kEtcd:
      return "Etcd";
  }
  return "?";
}

class LoopStoreContract : public ::testing::TestWithParam<Kind> {
 protected:
  static void TearDownTestSuite() {
    delete etcd_;
    etcd_ = nullptr;
  }

  void SetUp() override {
    if (GetParam() == Kind::kTcpStore) server_ = std::make_unique<TcpStoreServer>("127.0.0.1", 0);
    if (GetParam() == Kind::kEtcd && !etcd_) etcd_ = new test::EtcdCluster(1);
  }

  // A connection of its own to the test's store (each node has one).
  std::unique_ptr<LoopStore> connect() {
    switch (GetParam()) {
      case Kind::kMemory:
        return on_loop(memory_);
      case Kind::kTcpStore:
        return on_loop(std::make_unique<TcpStoreClient>("127.0.0.1", server_->port()));
      case Kind::kEtcd: {
        std::string prefix = std::string("/contract/") +
                             ::testing::UnitTest::GetInstance()->current_test_info()->name() + "/";
        return on_loop(std::make_unique<EtcdStore>(
            std::make_unique<EtcdClient>(parse_etcd_endpoints(etcd_->endpoints()), 10s), prefix));
      }
    }
    return nullptr;
  }

  asio::io_context io_;
  CancelSignal cancel_;

 private:
  MemoryStore memory_;
  std::unique_ptr<TcpStoreServer> server_;
  static test::EtcdCluster* etcd_;
};
test::EtcdCluster* LoopStoreContract::etcd_ = nullptr;

TEST_P(LoopStoreContract, ValuesAreBytesAndAMissingKeyIsNone) {
  auto store = connect();
  testing::run_task(io_, [&]() -> Task<void> {
    const std::string key = "a";
    const std::string value("x\0y", 3);
    co_await store->set(key, value, cancel_);
    std::vector<std::string> keys{"a", "missing"};
    Values got = co_await store->get_now(keys, cancel_);
    EXPECT_EQ(got, (Values{value, std::nullopt}));
    std::vector<std::string> none;
    Values nothing = co_await store->get_now(none, cancel_);
    EXPECT_TRUE(nothing.empty());
  }());
}

TEST_P(LoopStoreContract, MultiSetSetsEveryKeyInOrder) {
  auto store = connect();
  testing::run_task(io_, [&]() -> Task<void> {
    std::vector<std::string> keys{"k1", "k2", "k3"};
    std::vector<std::string> values{"one", "two", "three"};
    co_await store->multi_set(keys, values, cancel_);
    Values got = co_await store->get_now(keys, cancel_);
    EXPECT_EQ(got, (Values{"one", "two", "three"}));
  }());
}

TEST_P(LoopStoreContract, AddStartsAtZeroAndReturnsTheNewValue) {
  auto store = connect();
  testing::run_task(io_, [&]() -> Task<void> {
    const std::string counter = "n";
    int64_t first = co_await store->add(counter, 5, cancel_);
    int64_t second = co_await store->add(counter, -2, cancel_);
    EXPECT_EQ(first, 5);
    EXPECT_EQ(second, 3);
  }());
}

TEST_P(LoopStoreContract, CompareSetWritesOnlyOverWhatItExpectsAndSaysWhatIsThere) {
  auto store = connect();
  testing::run_task(io_, [&]() -> Task<void> {
    const std::string key = "cas";
    const std::string nothing;
    const std::string first = "first";
    const std::string second = "second";
    const std::string wrong = "wrong";
    std::string created = co_await store->compare_set(key, nothing, first, cancel_);
    EXPECT_EQ(created, "first") << "\"\" expects the key missing";
    std::string refused = co_await store->compare_set(key, wrong, second, cancel_);
    EXPECT_EQ(refused, "first") << "a wrong expectation leaves it";
    std::string replaced = co_await store->compare_set(key, first, second, cancel_);
    EXPECT_EQ(replaced, "second");
  }());
}

TEST_P(LoopStoreContract, AWaitReturnsTheValuesOnceEveryKeyIsThereOrNoneAtItsTimeout) {
  auto store = connect();
  testing::run_task(io_, [&]() -> Task<void> {
    const std::string key = "there";
    const std::string value = "v";
    co_await store->set(key, value, cancel_);
    std::vector<std::string> present{"there"};
    auto values = co_await store->wait_for(present, 5s, cancel_);
    EXPECT_EQ(values, (std::optional<std::vector<std::string>>{{"v"}}));
    bool there = co_await store->wait_until_there(present, 5s, cancel_);
    EXPECT_TRUE(there);
    std::vector<std::string> one_missing{"there", "never"};
    auto timed_out = co_await store->wait_for(one_missing, 100ms, cancel_);
    EXPECT_FALSE(timed_out.has_value());
    bool not_there = co_await store->wait_until_there(one_missing, 100ms, cancel_);
    EXPECT_FALSE(not_there);
  }());
}

// Another node (a connection of its own, on the same loop) writes the last key while
// this one waits: the wait wakes with its value.
TEST_P(LoopStoreContract, AWaitWakesWhenAnotherNodeWritesTheLastKey) {
  auto store = connect();
  auto other = connect();
  asio::co_spawn(
      io_,
      [&]() -> Task<void> {
        CancelSignal never;
        co_await sleep_for(50ms, never);
        const std::string key = "late";
        const std::string value = "arrived";
        co_await other->set(key, value, never);
      },
      asio::detached);
  auto values = testing::run_task(io_, [&]() -> Task<std::optional<std::vector<std::string>>> {
    std::vector<std::string> keys{"late"};
    auto got = co_await store->wait_for(keys, 10s, cancel_);
    co_return got;
  }());
  EXPECT_EQ(values, (std::optional<std::vector<std::string>>{{"arrived"}}));
}

// A barrier's count: each that reaches it is counted once, and the last learns it is.
TEST_P(LoopStoreContract, CountInCountsEachOneThatReachesIt) {
  auto store = connect();
  testing::run_task(io_, [&]() -> Task<void> {
    const std::string counter = "barrier";
    const std::string a = "barrier/a";
    const std::string b = "barrier/b";
    int64_t first = co_await store->count_in(counter, a, cancel_);
    int64_t second = co_await store->count_in(counter, b, cancel_);
    EXPECT_EQ(first, 1);
    EXPECT_EQ(second, 2);
    std::vector<std::string> marks{"barrier/a", "barrier/b"};
    bool marked = co_await store->wait_until_there(marks, 1s, cancel_);
    EXPECT_TRUE(marked) << "each mark is a key";
  }());
}

// A cancel ends a wait at once, with Error, whatever the store.
TEST_P(LoopStoreContract, ACancelEndsAWaitAtOnce) {
  auto store = connect();
  CancelSignal cancel;
  asio::co_spawn(
      io_,
      [&]() -> Task<void> {
        CancelSignal never;
        co_await sleep_for(50ms, never);
        cancel.cancel();
      },
      asio::detached);
  EXPECT_THROW(testing::run_task(io_,
                                 [&]() -> Task<void> {
                                   std::vector<std::string> keys{"never"};
                                   auto got = co_await store->wait_for(keys, 30s, cancel);
                                   (void)got;
                                 }()),
               Error);
}

INSTANTIATE_TEST_SUITE_P(Stores, LoopStoreContract,
                         ::testing::Values(Kind::kMemory, Kind::kTcpStore, Kind::kEtcd), kind_name);

}  // namespace
}  // namespace ddprun::store
