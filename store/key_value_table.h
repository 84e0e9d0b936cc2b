#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace ddprun::store {

/// The data and exact semantics of PyTorch's TCPStore, shared by MemoryStore and
/// the TCP server so both behave identically. Not thread-safe.
/// Mutating calls report whether the key was written, so callers can wake waiters.
class KeyValueTable {
 public:
  /// Thrown by add() when the stored value is not a decimal integer.
  struct NotANumber {};

  void set(const std::string& key, std::string value) { data_[key] = std::move(value); }
  const std::string* find(const std::string& key) const;
  bool contains(const std::string& key) const { return data_.count(key) != 0; }

  /// Returns the new value; throws NotANumber.
  int64_t add(const std::string& key, int64_t delta);

  struct CompareSetResult {
    std::string reply;
    bool written = false;
  };
  CompareSetResult compare_set(const std::string& key, const std::string& expected,
                               const std::string& desired);

  void append(const std::string& key, const std::string& value) { data_[key] += value; }
  bool erase(const std::string& key) { return data_.erase(key) != 0; }
  bool contains_all(const std::vector<std::string>& keys) const;
  int64_t size() const { return static_cast<int64_t>(data_.size()); }

  template <typename F>
  void for_each_key(F f) const {
    for (const auto& [k, v] : data_) f(k);
  }

  /// Removes every key that does not start with `keep_prefix`; returns how many.
  size_t erase_all_except(const std::string& keep_prefix);
  /// Deletes every key starting with `prefix`; returns how many.
  size_t erase_prefix(const std::string& prefix);

 private:
  std::unordered_map<std::string, std::string> data_;
};

}  // namespace ddprun::store
