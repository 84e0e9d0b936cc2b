#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/cancel_signal.h"
#include "common/coro.h"
#include "store/store.h"

namespace ddprun::store {

class EtcdStore;
class MemoryStore;
class TcpStoreClient;

/// A store connection as the agent's loop uses it: its quick requests (one round trip
/// each) through store(), and waits for keys as completions of the loop through
/// wait_for(): the loop's only way to wait on a store. Each store waits its own way: a
/// TCPStore with its WAIT request, whose answer the loop reads as it arrives; etcd with
/// a watch stream (moving on to the next member when it breaks or stays silent); the
/// in-process MemoryStore of unit tests with a wait list its writers wake. The blocking
/// Store stays for the C++ SDK and for threads.
///
/// Thread-safety: the loop's thread only.
class LoopStore {
 public:
  virtual ~LoopStore() = default;

  virtual Store& store() = 0;

  /// From a coroutine on the loop: the values of `keys` once every one exists, or
  /// nullopt when `timeout` passes first. `cancel` ends it with Error; a TCPStore
  /// connection is dropped then (the next call reconnects), as its WAIT is left
  /// unanswered. The connection serves nothing else until this returns. Throws
  /// StoreError as the store does.
  virtual Task<std::optional<std::vector<std::string>>> wait_for(
      std::vector<std::string> keys, std::chrono::milliseconds timeout, CancelSignal& cancel) = 0;

  /// Whether wait_for()'s values come with the wait itself, no request of their own
  /// (etcd: its read and its watch carry them). Where not (a TCPStore reads them after
  /// its WAIT, in one reply), a caller waiting on many large values waits with
  /// wait_until_there() and reads them its own way, a few to a request.
  virtual bool wait_brings_values() const { return false; }

  /// As wait_for(), for a caller that needs no values: whether every one of `keys`
  /// exists, or false when `timeout` passes first. Over a TCPStore, one request (its
  /// WAIT) where wait_for() reads the values with a second.
  virtual Task<bool> wait_until_there(std::vector<std::string> keys,
                                      std::chrono::milliseconds timeout, CancelSignal& cancel) {
    auto values = co_await wait_for(std::move(keys), timeout, cancel);
    co_return values.has_value();
  }

  /// From a coroutine on the loop: the values of `keys` now (nullopt: not there), one
  /// round trip. A TCPStore's answer and etcd's reply are the loop's completions, which
  /// `cancel` ends (Error; the connection is dropped); the in-memory store answers at
  /// once.
  virtual Task<std::vector<std::optional<std::string>>> get_now(std::vector<std::string> keys,
                                                                CancelSignal& cancel) = 0;
  /// From a coroutine on the loop: sets `key`, one request, awaited as get_now() is.
  virtual Task<void> set(std::string key, std::string value, CancelSignal& cancel) = 0;
  /// From a coroutine on the loop: sets every key of `keys` to its value of `values`,
  /// in their order (a key set last is there only once the others are), as few
  /// requests as the store allows: one over a TCPStore, a transaction per hundred keys
  /// on etcd.
  virtual Task<void> multi_set(std::vector<std::string> keys, std::vector<std::string> values,
                               CancelSignal& cancel) = 0;
  /// From a coroutine on the loop: adds `delta` to the counter `key` and returns its
  /// new value; one request, awaited as get_now() is.
  virtual Task<int64_t> add(std::string key, int64_t delta, CancelSignal& cancel) = 0;
  /// From a coroutine on the loop: counts this one among those that reach a barrier
  /// and returns how many have, this one included (the one that gets the total knows
  /// every one is there): `counter` counts them and `mark`, a key directly under
  /// `counter` + "/", says that this one did. Over a TCPStore an ADD on `counter`, then
  /// the mark. etcd's ADD is a compare-and-set that N counting at once retry N times
  /// each (N x N requests): there the mark is put and the marks under `counter` + "/"
  /// counted in one transaction, so a mark set again counts once, and so does a mark
  /// set by a plain set() (an agent that marks but does not count).
  virtual Task<int64_t> count_in(std::string counter, std::string mark, CancelSignal& cancel) {
    int64_t counted = co_await add(std::move(counter), 1, cancel);
    const std::string one =
        "1";  // a local: GCC 12 (docs/contributing.md) frees a temporary made in a co_await twice
    co_await set(std::move(mark), one, cancel);
    co_return counted;
  }
  /// From a coroutine on the loop: sets `key` to `desired` where it holds `expected`
  /// ("": not there) and returns what it holds after; one request, awaited as
  /// get_now() is.
  virtual Task<std::string> compare_set(std::string key, std::string expected, std::string desired,
                                        CancelSignal& cancel) = 0;
};

std::unique_ptr<LoopStore> on_loop(std::unique_ptr<TcpStoreClient> client);
std::unique_ptr<LoopStore> on_loop(std::unique_ptr<EtcdStore> store);
std::unique_ptr<LoopStore> on_loop(std::unique_ptr<MemoryStore> store);
/// A MemoryStore shared with others (tests' nodes as threads), not owned.
std::unique_ptr<LoopStore> on_loop(MemoryStore& store);

}  // namespace ddprun::store
