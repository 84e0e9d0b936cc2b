#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/etcd/etcd_client.h"
#include "store/store.h"

namespace ddprun::store {

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

  /// wait() driven from an event loop, on a store that serves nothing else until
  /// end_wait(); no step holds the loop longer than kLoopAttempt (one member tried; a
  /// StoreError has moved on to the next one: start again after a pause). start_wait()
  /// reads the keys (unless they are known to be newer than a revision): true when they
  /// all exist. Otherwise open_wait() opens a watch on them and returns the descriptor
  /// to wait on; when that is readable wait_readable() takes what arrived (true: all
  /// there; after a StoreError, start_wait() again). A watch silent for wait_silence()
  /// may be a frozen member's: wait_silent() moves on to the next member, then
  /// start_wait() again. wait_values() then gives the keys' values. EtcdRefusedError:
  /// the wait cannot go on.
  static constexpr std::chrono::milliseconds kLoopAttempt{1000};
  bool start_wait(const std::vector<std::string>& keys);
  int open_wait();
  bool wait_readable();
  void wait_silent();
  std::chrono::milliseconds wait_silence() const;
  std::vector<std::string> wait_values() const;
  void end_wait();

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

  struct KeysAwaited;
  std::unique_ptr<KeysAwaited> await(const std::vector<std::string>& keys);

  std::unique_ptr<EtcdClient> client_;
  std::string prefix_;
  int64_t newer_than_;
  std::map<std::string, std::optional<EtcdKv>> seen_;  // key -> as last seen (nullopt: missing)
  std::vector<std::string> awaited_keys_;              // the event loop's wait
  std::unique_ptr<KeysAwaited> awaited_;
};

}  // namespace ddprun::store
