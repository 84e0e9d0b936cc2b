#include "store/etcd/etcd_store.h"

#include "store/etcd/etcd_keys_awaited.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace ddprun::store {

EtcdStore::EtcdStore(std::unique_ptr<EtcdClient> client, std::string prefix, int64_t newer_than)
    : client_(std::move(client)), prefix_(std::move(prefix)), newer_than_(newer_than) {}

EtcdStore::~EtcdStore() = default;

template <typename Next>
auto EtcdStore::update(const std::string& key, Next next) {
  std::optional<EtcdKv>& known = seen_[key];
  bool confirmed = false;  // `known` was read from etcd during this call
  while (true) {
    std::optional<std::string> current;
    if (known) current = known->value;
    auto [to_write, result] = next(current);
    if (!to_write) {
      if (confirmed) return result;
      // Decided on a value seen earlier: make sure it is still the value.
      auto r = client_->range(prefix_ + key);
      known = r.kvs.empty() ? std::nullopt : std::optional<EtcdKv>(r.kvs[0]);
      confirmed = true;
      continue;
    }
    std::optional<EtcdKv> now;
    bool written =
        client_->put_if_revision(prefix_ + key, known ? known->mod_revision : 0, *to_write, &now);
    known = now;
    if (written) return result;
    confirmed = true;
  }
}

std::optional<std::string> EtcdStore::get_now(const std::string& key) {
  return get_now(std::vector<std::string>{key})[0];
}

std::vector<std::optional<std::string>> EtcdStore::get_now(const std::vector<std::string>& keys) {
  std::vector<std::string> full;
  for (const auto& k : keys) full.push_back(prefix_ + k);
  std::vector<std::optional<std::string>> out;
  for (const auto& r : client_->ranges(full)) {
    out.push_back(r.kvs.empty() ? std::nullopt : std::optional<std::string>(r.kvs[0].value));
  }
  return out;
}

void EtcdStore::set(const std::string& key, const std::string& value) {
  client_->put(prefix_ + key, value);
}

std::string EtcdStore::get(const std::string& key, std::chrono::milliseconds timeout) {
  return multi_get({key}, timeout)[0];
}

int64_t EtcdStore::add(const std::string& key, int64_t delta) {
  if (delta == 0) {  // a read: no write, no revision spent
    auto value = get_now(key);
    return value && !value->empty() ? std::stoll(*value) : 0;
  }
  return update(key, [&](const std::optional<std::string>& current) {
    int64_t sum = (current && !current->empty() ? std::stoll(*current) : 0) + delta;
    return std::pair{std::optional<std::string>(std::to_string(sum)), sum};
  });
}

std::string EtcdStore::compare_set(const std::string& key, const std::string& expected,
                                   const std::string& desired) {
  return update(key, [&](const std::optional<std::string>& current) {
    bool equal = current ? *current == expected : expected.empty();
    if (equal) return std::pair{std::optional<std::string>(desired), desired};
    return std::pair{std::optional<std::string>(), current.value_or(expected)};
  });
}

bool EtcdStore::check(const std::vector<std::string>& keys) {
  std::vector<std::string> full;
  for (const auto& k : keys) full.push_back(prefix_ + k);
  auto found = client_->ranges(full);
  return std::all_of(found.begin(), found.end(), [](const auto& r) { return !r.kvs.empty(); });
}

void EtcdStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  wait_for(keys, timeout, false);
}

std::vector<std::string> EtcdStore::multi_get(const std::vector<std::string>& keys,
                                              std::chrono::milliseconds timeout) {
  return wait_for(keys, timeout, true);
}

// Reads the keys, unless they are known to be newer than a revision: the watch starts
// from just after the revision read (or known to precede them), so a key created in
// between is an event, not a miss. The events carry the values.
std::unique_ptr<EtcdKeysAwaited> EtcdStore::await(const std::vector<std::string>& keys) {
  auto a = std::make_unique<EtcdKeysAwaited>(prefix_, keys, newer_than_);
  if (a->from == 0) a->take(client_->ranges(a->full));
  return a;
}

std::vector<std::string> EtcdStore::wait_for(const std::vector<std::string>& keys,
                                             std::chrono::milliseconds timeout,
                                             bool values_wanted) {
  auto deadline = EtcdClient::Clock::now() + timeout;
  auto a = await(keys);
  if (!a->missing.empty()) {
    auto [start, end] = a->range();
    bool all_there = false;
    try {
      all_there = client_->watch(start, end, a->from + 1, deadline,
                                 [&a](const EtcdEvent& e) { return a->take(e); });
    } catch (const EtcdCompactedError&) {
      if (newer_than_ == 0) throw;
      newer_than_ = 0;  // that history is gone: read first
      return wait_for(keys,
                      std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - EtcdClient::Clock::now()),
                      values_wanted);
    }
    if (!all_there) {
      std::string names;
      for (const auto& m : a->missing)
        names += (names.empty() ? "" : ", ") + m.substr(prefix_.size());
      throw TimeoutError("timed out after " + std::to_string(timeout.count()) +
                         " ms waiting for key(s) " + names + " in etcd at " +
                         client_->endpoints_text());
    }
  }
  if (!values_wanted) return {};
  return a->result();
}

std::optional<std::vector<std::pair<std::string, std::string>>> EtcdStore::list_prefix(
    const std::string& prefix) {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& kv : client_->range(prefix_ + prefix, etcd_prefix_end(prefix_ + prefix)).kvs) {
    out.emplace_back(kv.key.substr(prefix_.size()), std::move(kv.value));
  }
  return out;
}

bool EtcdStore::delete_key(const std::string& key) { return client_->remove(prefix_ + key) > 0; }

int64_t EtcdStore::num_keys() {
  return client_->range(prefix_, etcd_prefix_end(prefix_), true).count;
}

void EtcdStore::multi_set(const std::vector<std::string>& keys,
                          const std::vector<std::string>& values) {
  for (size_t i = 0; i < keys.size() && i < values.size(); ++i) set(keys[i], values[i]);
}

void EtcdStore::append(const std::string& key, const std::string& value) {
  update(key, [&](const std::optional<std::string>& current) {
    return std::pair{std::optional<std::string>(current.value_or("") + value), 0};
  });
}

}  // namespace ddprun::store
