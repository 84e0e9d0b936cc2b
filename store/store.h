#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"

namespace ddprun::store {

using ddprun::StoreError;  // common/error.h: the network layer throws it too

/// The key-value store that agents and workers rendezvous through, with the
/// semantics of PyTorch's c10d Store. Keys and values are byte strings.
/// Implementations are thread-safe unless stated otherwise. Errors: StoreError,
/// TimeoutError (a wait that did not finish in time).
class Store {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kDefaultTimeout{300'000};

  virtual ~Store() = default;

  virtual void set(const std::string& key, const std::string& value) = 0;
  /// Waits (up to `timeout`) for the key, then returns its value.
  virtual std::string get(const std::string& key, std::chrono::milliseconds timeout) = 0;
  /// Adds `delta` to the decimal integer stored at `key` (missing = 0); returns the sum.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  /// Writes `desired` if the current value equals `expected` (missing key and empty
  /// `expected` count as equal); returns the value now stored, or `expected` when the
  /// key is missing and `expected` is not empty.
  virtual std::string compare_set(const std::string& key, const std::string& expected,
                                  const std::string& desired) = 0;
  /// True when every key exists.
  virtual bool check(const std::vector<std::string>& keys) = 0;
  /// Blocks until every key exists; TimeoutError after `timeout`.
  virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
  /// True if the key existed.
  virtual bool delete_key(const std::string& key) = 0;
  virtual int64_t num_keys() = 0;
  virtual std::vector<std::string> multi_get(const std::vector<std::string>& keys,
                                             std::chrono::milliseconds timeout) = 0;
  virtual void multi_set(const std::vector<std::string>& keys,
                         const std::vector<std::string>& values) = 0;
  /// Appends to the value (creating it when missing).
  virtual void append(const std::string& key, const std::string& value) = 0;

  /// The value if the key exists now, without waiting. (Stores that can answer in
  /// one round trip override it.)
  virtual std::optional<std::string> get_now(const std::string& key) {
    if (!check({key})) return std::nullopt;
    return get(key, kDefaultTimeout);
  }
  /// Every key starting with `prefix` with its value, where the store can list keys
  /// (nullopt where it cannot: TCPStore).
  virtual std::optional<std::vector<std::pair<std::string, std::string>>> list_prefix(
      const std::string& prefix) {
    (void)prefix;
    return std::nullopt;
  }

  /// Several keys at once, one round trip where the store can.
  virtual std::vector<std::optional<std::string>> get_now(const std::vector<std::string>& keys) {
    std::vector<std::optional<std::string>> out;
    for (const auto& k : keys) out.push_back(get_now(k));
    return out;
  }

  /// Makes a call blocked in another thread fail promptly with StoreError; the store
  /// is unusable afterwards. The one method that may be called concurrently.
  virtual void interrupt() = 0;
};

}  // namespace ddprun::store
