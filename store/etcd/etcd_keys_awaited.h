#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "store/etcd/etcd_client.h"

// Internal to EtcdStore: its waits for keys, blocking (etcd_store.cc) and on the loop
// (etcd_store_on_loop.cc).
namespace ddprun::store {

// What one wait for keys has seen so far (full keys).
struct EtcdKeysAwaited {
  std::vector<std::string> full;
  std::set<std::string> wanted;
  std::map<std::string, std::string> values;
  std::set<std::string> missing;
  int64_t from = 0;  // watch from just after this revision

  EtcdKeysAwaited(const std::string& prefix, const std::vector<std::string>& keys,
                  int64_t newer_than) {
    for (const auto& k : keys) full.push_back(prefix + k);
    wanted.insert(full.begin(), full.end());
    missing = wanted;
    from = newer_than;
  }
  // Takes what a read found (one range per key, in order).
  void take(const std::vector<EtcdClient::Range>& found) {
    for (size_t i = 0; i < full.size(); ++i) {
      if (found[i].kvs.empty()) continue;
      values[full[i]] = found[i].kvs[0].value;
      missing.erase(full[i]);
    }
    from = found[0].revision;
  }
  // Takes an event; false once every key is there.
  bool take(const EtcdEvent& e) {
    if (!wanted.count(e.kv.key)) return true;
    if (e.deleted) {
      values.erase(e.kv.key);
      missing.insert(e.kv.key);
    } else {
      values[e.kv.key] = e.kv.value;
      missing.erase(e.kv.key);
    }
    return !missing.empty();
  }
  // What the missing keys share: one key, or the range of their common prefix.
  std::pair<std::string, std::string> range() const {
    const std::string& lo = *missing.begin();
    const std::string& hi = *missing.rbegin();
    if (missing.size() == 1) return {lo, ""};
    size_t common = 0;
    while (common < lo.size() && common < hi.size() && lo[common] == hi[common]) ++common;
    std::string start = lo.substr(0, common);
    return {start, etcd_prefix_end(start)};
  }
  std::vector<std::string> result() const {
    std::vector<std::string> out;
    out.reserve(full.size());
    for (const auto& k : full) out.push_back(values.at(k));
    return out;
  }
};

}  // namespace ddprun::store
