#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/cancel_signal.h"
#include "common/coro.h"
#include "store/etcd/etcd_client.h"
#include "store/store.h"

namespace ddprun::store {

struct EtcdKeysAwaited;  // etcd_keys_awaited.h

/// The Store interface over etcd (keys under `prefix`): compare-and-set and add are
/// transactions on the key's revision, waits are watches from the revision the keys
/// were read at (nothing polls, nothing is missed). Lets the elastic rendezvous run
/// on etcd unchanged.
///
/// Thread-safety: one call at a time (one connection); interrupt() from any thread.
class EtcdStore : public Store {
 public:
  /// `newer_than`: every key waited for is newer than this revision, so waits watch
  /// from just after it without reading first (0: they read first).
  EtcdStore(std::unique_ptr<EtcdClient> client, std::string prefix, int64_t newer_than = 0);
  ~EtcdStore() override;

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, std::chrono::milliseconds timeout) override;
  int64_t add(const std::string& key, int64_t delta) override;
  std::string compare_set(const std::string& key, const std::string& expected,
                          const std::string& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;
  std::vector<std::string> multi_get(const std::vector<std::string>& keys,
                                     std::chrono::milliseconds timeout) override;
  void multi_set(const std::vector<std::string>& keys,
                 const std::vector<std::string>& values) override;
  void append(const std::string& key, const std::string& value) override;
  void interrupt() override { client_->interrupt(); }
  using Store::get_now;
  std::optional<std::string> get_now(const std::string& key) override;
  std::vector<std::optional<std::string>> get_now(const std::vector<std::string>& keys) override;
  std::optional<std::vector<std::pair<std::string, std::string>>> list_prefix(
      const std::string& prefix) override;

  EtcdClient& client() { return *client_; }

  /// The same requests from a coroutine on a loop (etcd_store_on_loop.cc), each
  /// EtcdClient's loop call: nothing holds the loop up, and `cancel` ends one at once.
  Task<std::vector<std::optional<std::string>>> get_now_on_loop(std::vector<std::string> keys,
                                                                CancelSignal& cancel);
  Task<void> set_on_loop(std::string key, std::string value, CancelSignal& cancel);
  /// Puts in order, a transaction per kPutsPerTxn (etcd refuses more than 128 operations
  /// in one by default).
  Task<void> multi_set_on_loop(std::vector<std::string> keys, std::vector<std::string> values,
                               CancelSignal& cancel);
  static constexpr size_t kPutsPerTxn = 100;
  Task<int64_t> add_on_loop(std::string key, int64_t delta, CancelSignal& cancel);
  /// LoopStore::count_in(): `mark` put and the marks under `counter` + "/" counted, in
  /// one transaction.
  Task<int64_t> count_in_on_loop(std::string counter, std::string mark, CancelSignal& cancel);
  Task<std::string> compare_set_on_loop(std::string key, std::string expected,
                                        std::string desired, CancelSignal& cancel);
  /// The values of `keys` once they all exist, or nullopt when `timeout` passes first,
  /// from a coroutine on a loop: the keys are read (unless known to be newer than a
  /// revision), then watched from there; wherever the stream breaks or stays silent,
  /// the next member is asked (the keys read again first). EtcdRefusedError: the wait
  /// cannot go on.
  Task<std::optional<std::vector<std::string>>> wait_on_loop(std::vector<std::string> keys,
                                                             std::chrono::milliseconds timeout,
                                                             CancelSignal& cancel);

 private:
  // Lets `next` decide the new value from the current one (nullopt: leave it) and
  // writes it if nobody changed the key meanwhile, else tries again with the value
  // the failed transaction read. Starts from the value last seen here (or "missing"),
  // so an uncontended update is one round trip. Returns what `next` returned last.
  template <typename Next>
  auto update(const std::string& key, Next next);
  // Blocks until every key exists; their values when `values_wanted`.
  std::vector<std::string> wait_for(const std::vector<std::string>& keys,
                                    std::chrono::milliseconds timeout, bool values_wanted);

  // A wait's first read of `keys`, blocking.
  std::unique_ptr<EtcdKeysAwaited> await(const std::vector<std::string>& keys);
  // update() on the loop: `decide` gives the value to write (nullopt: leave it) and
  // what to return.
  using Decide = std::function<std::pair<std::optional<std::string>, std::string>(
      const std::optional<std::string>&)>;
  Task<std::string> update_on_loop(std::string key, Decide decide, CancelSignal& cancel);
  class KeysStream;  // a wait's watch, on the loop

  std::unique_ptr<EtcdClient> client_;
  std::string prefix_;
  int64_t newer_than_;
  std::map<std::string, std::optional<EtcdKv>> seen_;  // key -> as last seen (nullopt: missing)
};

}  // namespace ddprun::store
