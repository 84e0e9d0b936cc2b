#pragma once

#include <string>

#include "store/store.h"

namespace ddprun::store {

/// Decorates another Store, putting "<prefix>/" in front of every key, so that
/// independent users (attempts, rounds) cannot see each other's keys.
/// Thread-safe as the store it wraps, which must outlive it.
class PrefixStore : public Store {
 public:
  PrefixStore(std::string prefix, Store& inner) : prefix_(std::move(prefix) + "/"), inner_(inner) {}

  void set(const std::string& key, const std::string& value) override {
    inner_.set(prefix_ + key, value);
  }
  std::string get(const std::string& key, std::chrono::milliseconds timeout) override {
    return inner_.get(prefix_ + key, timeout);
  }
  int64_t add(const std::string& key, int64_t delta) override {
    return inner_.add(prefix_ + key, delta);
  }
  std::string compare_set(const std::string& key, const std::string& expected,
                          const std::string& desired) override {
    return inner_.compare_set(prefix_ + key, expected, desired);
  }
  bool check(const std::vector<std::string>& keys) override { return inner_.check(prefixed(keys)); }
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    inner_.wait(prefixed(keys), timeout);
  }
  bool delete_key(const std::string& key) override { return inner_.delete_key(prefix_ + key); }
  /// Counts every key of the inner store, as PyTorch's PrefixStore does.
  int64_t num_keys() override { return inner_.num_keys(); }
  std::vector<std::string> multi_get(const std::vector<std::string>& keys,
                                     std::chrono::milliseconds timeout) override {
    return inner_.multi_get(prefixed(keys), timeout);
  }
  void multi_set(const std::vector<std::string>& keys,
                 const std::vector<std::string>& values) override {
    inner_.multi_set(prefixed(keys), values);
  }
  void append(const std::string& key, const std::string& value) override {
    inner_.append(prefix_ + key, value);
  }
  void interrupt() override { inner_.interrupt(); }

 private:
  std::vector<std::string> prefixed(const std::vector<std::string>& keys) const {
    std::vector<std::string> out;
    out.reserve(keys.size());
    for (const auto& k : keys) out.push_back(prefix_ + k);
    return out;
  }

  std::string prefix_;
  Store& inner_;
};

}  // namespace ddprun::store
