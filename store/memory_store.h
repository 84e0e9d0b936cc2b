#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>

#include "store/key_value_table.h"
#include "store/store.h"

namespace ddprun::store {

/// An in-process Store with the TCP server's exact semantics; the fake that unit
/// tests run ranks (as threads) against. Thread-safe.
class MemoryStore : public Store {
 public:
  /// While it lives, `on_change` runs after each write (on the writer's thread, with
  /// the store locked: it only wakes a waiter): the wait list of waits on a loop.
  class Watch {
   public:
    Watch(MemoryStore& store, std::function<void()> on_change);
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

   private:
    MemoryStore& store_;
    int id_;
  };

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
  using Store::get_now;
  /// All at once, as a TCPStore's MULTI_GET or an etcd transaction reads them: a
  /// writer on another thread is seen entirely or not at all.
  std::vector<std::optional<std::string>> get_now(const std::vector<std::string>& keys) override;
  void multi_set(const std::vector<std::string>& keys,
                 const std::vector<std::string>& values) override;
  void append(const std::string& key, const std::string& value) override;
  std::optional<std::vector<std::pair<std::string, std::string>>> list_prefix(
      const std::string& prefix) override;
  void interrupt() override;

 private:
  void wait_locked(std::unique_lock<std::mutex>& lock, const std::vector<std::string>& keys,
                   std::chrono::milliseconds timeout);

  void changed();  // with mutex_ held

  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<int, std::function<void()>> watches_;
  int next_watch_ = 0;
  KeyValueTable table_;
  bool interrupted_ = false;
};

}  // namespace ddprun::store
