#include "store/memory_store.h"

namespace ddprun::store {

MemoryStore::Watch::Watch(MemoryStore& store, std::function<void()> on_change) : store_(store) {
  std::lock_guard lock(store_.mutex_);
  id_ = store_.next_watch_++;
  store_.watches_.emplace(id_, std::move(on_change));
}

MemoryStore::Watch::~Watch() {
  std::lock_guard lock(store_.mutex_);
  store_.watches_.erase(id_);
}

void MemoryStore::changed() {
  changed_.notify_all();
  for (const auto& [id, on_change] : watches_) on_change();
}

void MemoryStore::set(const std::string& key, const std::string& value) {
  std::lock_guard lock(mutex_);
  table_.set(key, value);
  changed();
}

void MemoryStore::wait_locked(std::unique_lock<std::mutex>& lock,
                              const std::vector<std::string>& keys,
                              std::chrono::milliseconds timeout) {
  if (!changed_.wait_for(lock, timeout,
                         [&] { return interrupted_ || table_.contains_all(keys); })) {
    throw TimeoutError("timed out waiting for store keys");
  }
  if (interrupted_) throw StoreError("the store was interrupted");
}

std::string MemoryStore::get(const std::string& key, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  wait_locked(lock, {key}, timeout);
  return *table_.find(key);
}

int64_t MemoryStore::add(const std::string& key, int64_t delta) {
  std::lock_guard lock(mutex_);
  try {
    int64_t v = table_.add(key, delta);
    changed();
    return v;
  } catch (const KeyValueTable::NotANumber&) {
    throw StoreError("add: the value of '" + key + "' is not an integer");
  }
}

std::string MemoryStore::compare_set(const std::string& key, const std::string& expected,
                                     const std::string& desired) {
  std::lock_guard lock(mutex_);
  auto r = table_.compare_set(key, expected, desired);
  if (r.written) changed();
  return r.reply;
}

bool MemoryStore::check(const std::vector<std::string>& keys) {
  std::lock_guard lock(mutex_);
  return table_.contains_all(keys);
}

void MemoryStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  wait_locked(lock, keys, timeout);
}

bool MemoryStore::delete_key(const std::string& key) {
  std::lock_guard lock(mutex_);
  return table_.erase(key);
}

int64_t MemoryStore::num_keys() {
  std::lock_guard lock(mutex_);
  return table_.size();
}

std::vector<std::string> MemoryStore::multi_get(const std::vector<std::string>& keys,
                                                std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  wait_locked(lock, keys, timeout);
  std::vector<std::string> out;
  for (const auto& k : keys) out.push_back(*table_.find(k));
  return out;
}

std::vector<std::optional<std::string>> MemoryStore::get_now(const std::vector<std::string>& keys) {
  std::lock_guard lock(mutex_);
  std::vector<std::optional<std::string>> out;
  out.reserve(keys.size());
  for (const auto& k : keys) {
    const std::string* value = table_.find(k);
    out.push_back(value ? std::optional<std::string>(*value) : std::nullopt);
  }
  return out;
}

void MemoryStore::multi_set(const std::vector<std::string>& keys,
                            const std::vector<std::string>& values) {
  if (keys.size() != values.size()) throw StoreError("multi_set needs one value per key");
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < keys.size(); ++i) table_.set(keys[i], values[i]);
  changed();
}

void MemoryStore::append(const std::string& key, const std::string& value) {
  std::lock_guard lock(mutex_);
  table_.append(key, value);
  changed();
}

}  // namespace ddprun::store

namespace ddprun::store {

void MemoryStore::interrupt() {
  std::lock_guard lock(mutex_);
  interrupted_ = true;
  changed();
}

std::optional<std::vector<std::pair<std::string, std::string>>> MemoryStore::list_prefix(
    const std::string& prefix) {
  std::lock_guard lock(mutex_);
  std::vector<std::pair<std::string, std::string>> out;
  table_.for_each_key([&](const std::string& k) {
    if (k.rfind(prefix, 0) == 0) out.emplace_back(k, *table_.find(k));
  });
  return out;
}

}  // namespace ddprun::store
