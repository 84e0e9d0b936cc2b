#include "store/loop_store.h"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/loop_waits.h"
#include "store/etcd/etcd_store.h"
#include "store/memory_store.h"
#include "store/tcpstore/store_connect.h"
#include "store/tcpstore/store_on_loop.h"
#include "store/tcpstore/tcp_store_client.h"

namespace ddprun::store {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
// Each wait builds its Values and co_returns that: `co_return std::nullopt;` after a
// co_await in a condition made GCC 12 (docs/contributing.md) emit a trap (SIGILL) in these
// coroutines.
using Values = std::optional<std::vector<std::string>>;

// The values of `keys` once a wait saw them all; "" for a key gone meanwhile.
std::vector<std::string> values_now(Store& store, const std::vector<std::string>& keys) {
  std::vector<std::string> values;
  values.reserve(keys.size());
  for (auto& v : store.get_now(keys)) values.push_back(std::move(v).value_or(""));
  return values;
}

// TCPStore's 2.x protocol (ddprun's server, PyTorch 2's), which answers several keys
// in one round trip (MULTI_GET): on_loop() takes no other.
class TcpLoopStore : public LoopStore {
 public:
  explicit TcpLoopStore(std::unique_ptr<TcpStoreClient> client) : client_(std::move(client)) {}
  Store& store() override { return *client_; }
  Task<std::vector<std::optional<std::string>>> get_now(std::vector<std::string> keys,
                                                        CancelSignal& cancel) override {
    return get_now_on_loop(*client_, std::move(keys), cancel);
  }
  Task<void> set(std::string key, std::string value, CancelSignal& cancel) override {
    return set_on_loop(*client_, std::move(key), std::move(value), cancel);
  }
  Task<void> multi_set(std::vector<std::string> keys, std::vector<std::string> values,
                       CancelSignal& cancel) override {
    return multi_set_on_loop(*client_, std::move(keys), std::move(values), cancel);
  }
  Task<int64_t> add(std::string key, int64_t delta, CancelSignal& cancel) override {
    return add_on_loop(*client_, std::move(key), delta, cancel);
  }
  Task<std::string> compare_set(std::string key, std::string expected, std::string desired,
                                CancelSignal& cancel) override {
    return compare_set_on_loop(*client_, std::move(key), std::move(expected), std::move(desired),
                               cancel);
  }
  Task<Values> wait_for(std::vector<std::string> keys, std::chrono::milliseconds timeout,
                        CancelSignal& cancel) override {
    bool all_there = co_await wait_on_loop(*client_, keys, timeout, cancel);
    Values values;
    if (!all_there) co_return values;
    auto now = co_await get_now_on_loop(*client_, keys, cancel);
    values.emplace();
    for (auto& v : now) values->push_back(std::move(v).value_or(""));
    co_return values;
  }
  Task<bool> wait_until_there(std::vector<std::string> keys, std::chrono::milliseconds timeout,
                              CancelSignal& cancel) override {
    return wait_on_loop(*client_, std::move(keys), timeout, cancel);
  }

 private:
  std::unique_ptr<TcpStoreClient> client_;
};

// etcd: every request and wait EtcdStore's on the loop.
class EtcdLoopStore : public LoopStore {
 public:
  explicit EtcdLoopStore(std::unique_ptr<EtcdStore> etcd) : etcd_(std::move(etcd)) {}
  Store& store() override { return *etcd_; }
  bool wait_brings_values() const override { return true; }
  Task<Values> wait_for(std::vector<std::string> keys, std::chrono::milliseconds timeout,
                        CancelSignal& cancel) override {
    return etcd_->wait_on_loop(std::move(keys), timeout, cancel);
  }
  Task<std::vector<std::optional<std::string>>> get_now(std::vector<std::string> keys,
                                                        CancelSignal& cancel) override {
    return etcd_->get_now_on_loop(std::move(keys), cancel);
  }
  Task<void> set(std::string key, std::string value, CancelSignal& cancel) override {
    return etcd_->set_on_loop(std::move(key), std::move(value), cancel);
  }
  Task<void> multi_set(std::vector<std::string> keys, std::vector<std::string> values,
                       CancelSignal& cancel) override {
    return etcd_->multi_set_on_loop(std::move(keys), std::move(values), cancel);
  }
  Task<int64_t> add(std::string key, int64_t delta, CancelSignal& cancel) override {
    return etcd_->add_on_loop(std::move(key), delta, cancel);
  }
  Task<int64_t> count_in(std::string counter, std::string mark, CancelSignal& cancel) override {
    return etcd_->count_in_on_loop(std::move(counter), std::move(mark), cancel);
  }
  Task<std::string> compare_set(std::string key, std::string expected, std::string desired,
                                CancelSignal& cancel) override {
    return etcd_->compare_set_on_loop(std::move(key), std::move(expected), std::move(desired),
                                      cancel);
  }

 private:
  std::unique_ptr<EtcdStore> etcd_;
};

// In memory: the wait is a wait list entry the store's writers wake (from any thread:
// the wake-up is posted to the waiter's loop).
class MemoryLoopStore : public LoopStore {
 public:
  MemoryLoopStore(std::unique_ptr<MemoryStore> owned, MemoryStore& store)
      : owned_(std::move(owned)), store_(store) {}
  Store& store() override { return store_; }
  Task<Values> wait_for(std::vector<std::string> keys, std::chrono::milliseconds timeout,
                        CancelSignal& cancel) override {
    cancel.check();
    auto deadline = Clock::now() + timeout;
    auto timer = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor);
    MemoryStore::Watch watch(store_, [timer] {
      asio::post(timer->get_executor(), [timer] { timer->cancel(); });
    });
    CancelSignal::Hook hook(cancel, [&timer] { timer->cancel(); });
    Values values;
    while (!store_.check(keys)) {
      if (Clock::now() >= deadline) co_return values;
      timer->expires_at(deadline);
      boost::system::error_code woken;
      co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, woken));
      cancel.check();
    }
    values = values_now(store_, keys);
    co_return values;
  }
  // The in-memory store answers at once: its calls never block the loop.
  Task<std::vector<std::optional<std::string>>> get_now(std::vector<std::string> keys,
                                                        CancelSignal& cancel) override {
    cancel.check();
    co_return store_.get_now(keys);
  }
  Task<void> set(std::string key, std::string value, CancelSignal& cancel) override {
    cancel.check();
    store_.set(key, value);
    co_return;
  }
  Task<void> multi_set(std::vector<std::string> keys, std::vector<std::string> values,
                       CancelSignal& cancel) override {
    cancel.check();
    store_.multi_set(keys, values);
    co_return;
  }
  Task<int64_t> add(std::string key, int64_t delta, CancelSignal& cancel) override {
    cancel.check();
    co_return store_.add(key, delta);
  }
  Task<std::string> compare_set(std::string key, std::string expected, std::string desired,
                                CancelSignal& cancel) override {
    cancel.check();
    co_return store_.compare_set(key, expected, desired);
  }

 private:
  std::unique_ptr<MemoryStore> owned_;
  MemoryStore& store_;
};

}  // namespace

std::unique_ptr<LoopStore> on_loop(std::unique_ptr<TcpStoreClient> client) {
  if (client->numbering() != tcpstore::Numbering::kV2) {
    throw Error("a TCPStore on the loop speaks the 2.x protocol (" + client->address() + ")");
  }
  return std::make_unique<TcpLoopStore>(std::move(client));
}

std::unique_ptr<LoopStore> on_loop(std::unique_ptr<EtcdStore> store) {
  return std::make_unique<EtcdLoopStore>(std::move(store));
}

std::unique_ptr<LoopStore> on_loop(std::unique_ptr<MemoryStore> store) {
  MemoryStore& s = *store;
  return std::make_unique<MemoryLoopStore>(std::move(store), s);
}

std::unique_ptr<LoopStore> on_loop(MemoryStore& store) {
  return std::make_unique<MemoryLoopStore>(nullptr, store);
}

}  // namespace ddprun::store
