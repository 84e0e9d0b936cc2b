#include <utility>

#include "store/etcd/etcd_keys_awaited.h"
#include "store/etcd/etcd_store.h"
#include "store/etcd/etcd_stream.h"

// EtcdStore's requests and waits from a coroutine on a loop: the blocking ones'
// (etcd_store.cc) over EtcdClient's loop calls.
namespace ddprun::store {

using Clock = EtcdClient::Clock;

Task<std::vector<std::optional<std::string>>> EtcdStore::get_now_on_loop(
    std::vector<std::string> keys, CancelSignal& cancel) {
  std::vector<std::string> full;
  for (const auto& k : keys) full.push_back(prefix_ + k);
  std::vector<EtcdClient::Range> found = co_await client_->ranges_on_loop(std::move(full), cancel);
  std::vector<std::optional<std::string>> out;
  for (const auto& r : found) {
    out.push_back(r.kvs.empty() ? std::nullopt : std::optional<std::string>(r.kvs[0].value));
  }
  co_return out;
}

Task<void> EtcdStore::set_on_loop(std::string key, std::string value, CancelSignal& cancel) {
  std::string full = prefix_ + key;
  co_await client_->put_on_loop(std::move(full), std::move(value), cancel);
}

Task<void> EtcdStore::multi_set_on_loop(std::vector<std::string> keys,
                                        std::vector<std::string> values, CancelSignal& cancel) {
  if (keys.size() != values.size()) throw StoreError("multi_set needs one value per key");
  for (size_t first = 0; first < keys.size(); first += kPutsPerTxn) {
    std::vector<EtcdOp> puts;
    for (size_t i = first; i < keys.size() && i < first + kPutsPerTxn; ++i) {
      puts.push_back(EtcdOp::put(prefix_ + keys[i], std::move(values[i])));
      seen_.erase(keys[i]);
    }
    std::optional<EtcdCompare> always;
    std::vector<EtcdOp> otherwise;
    co_await client_->txn_on_loop(always, std::move(puts), std::move(otherwise), cancel);
  }
}

Task<std::string> EtcdStore::update_on_loop(std::string key, Decide decide,
                                            CancelSignal& cancel) {
  std::string full = prefix_ + key;
  bool confirmed = false;  // what is known of the key was read from etcd during this call
  while (true) {
    std::optional<EtcdKv> known = seen_[key];
    std::optional<std::string> current;
    if (known) current = known->value;
    auto decision = decide(current);
    if (!decision.first) {
      if (confirmed) co_return decision.second;
      // Decided on a value seen earlier: make sure it is still the value.
      std::string whole_key;
      EtcdClient::Range r = co_await client_->range_on_loop(full, whole_key, cancel);
      seen_[key] = r.kvs.empty() ? std::nullopt : std::optional<EtcdKv>(r.kvs[0]);
      confirmed = true;
      continue;
    }
    int64_t revision = known ? known->mod_revision : 0;
    std::string value = *decision.first;
    EtcdClient::PutIfRevision put =
        co_await client_->put_if_revision_on_loop(full, revision, value, cancel);
    seen_[key] = put.now;
    if (put.written) co_return decision.second;
    confirmed = true;
  }
}

Task<int64_t> EtcdStore::add_on_loop(std::string key, int64_t delta, CancelSignal& cancel) {
  if (delta == 0) {  // a read: no write, no revision spent
    std::vector<std::string> keys(1, key);
    auto values = co_await get_now_on_loop(std::move(keys), cancel);
    co_return values[0] && !values[0]->empty() ? std::stoll(*values[0]) : 0;
  }
  Decide sum = [delta](const std::optional<std::string>& current) {
    int64_t total = (current && !current->empty() ? std::stoll(*current) : 0) + delta;
    return std::pair{std::optional<std::string>(std::to_string(total)), std::to_string(total)};
  };
  std::string total = co_await update_on_loop(std::move(key), std::move(sum), cancel);
  co_return std::stoll(total);
}

Task<int64_t> EtcdStore::count_in_on_loop(std::string counter, std::string mark,
                                           CancelSignal& cancel) {
  std::string marks = prefix_ + counter + "/";
  if ((prefix_ + mark).rfind(marks, 0) != 0) {
    throw StoreError("the mark " + mark + " is not under " + counter + "/");
  }
  std::vector<EtcdOp> ops{EtcdOp::put(prefix_ + mark, "1"),
                          EtcdOp::count(marks, etcd_prefix_end(marks))};
  seen_.erase(mark);
  std::optional<EtcdCompare> always;
  std::vector<EtcdOp> otherwise;
  auto r = co_await client_->txn_on_loop(always, std::move(ops), std::move(otherwise), cancel);
  if (r.ranges.size() != 1) {
    throw StoreError("etcd at " + client_->endpoints_text() + ": short transaction reply");
  }
  co_return r.ranges[0].count;
}

Task<std::string> EtcdStore::compare_set_on_loop(std::string key, std::string expected,
                                                 std::string desired, CancelSignal& cancel) {
  Decide swap = [expected, desired](const std::optional<std::string>& current) {
    bool equal = current ? *current == expected : expected.empty();
    if (equal) return std::pair{std::optional<std::string>(desired), desired};
    return std::pair{std::optional<std::string>(), current.value_or(expected)};
  };
  co_return co_await update_on_loop(std::move(key), std::move(swap), cancel);
}

// A wait's watch: (re)opened after a read of the keys (unless they are known to be
// newer than a revision), from just after the revision read.
class EtcdStore::KeysStream : public EtcdStream {
 public:
  KeysStream(EtcdStore& store, const std::vector<std::string>& keys, Clock::time_point deadline)
      : store_(store), keys_(keys), deadline_(deadline) {}

  Task<int> open(CancelSignal& cancel) override {
    EtcdClient& client = *store_.client_;
    awaited_ = std::make_unique<EtcdKeysAwaited>(store_.prefix_, keys_, store_.newer_than_);
    if (awaited_->from == 0) {
      std::vector<std::string> full = awaited_->full;
      auto found = co_await client.ranges_on_loop(std::move(full), cancel, deadline_);
      awaited_->take(found);
    }
    if (awaited_->missing.empty()) co_return -1;
    auto range = awaited_->range();
    client.begin_loop_watch(range.first, range.second, awaited_->from + 1);
    co_return co_await client.open_loop_watch(cancel);
  }
  bool take() override {
    try {
      return store_.client_->read_loop_watch(
          [this](const EtcdEvent& e) { return awaited_->take(e); });
    } catch (const EtcdCompactedError&) {
      if (store_.newer_than_ == 0) throw;
      store_.newer_than_ = 0;  // that history is gone: the next open() reads first
      throw StoreError("etcd compacted the revisions watched; reading the keys instead");
    }
  }
  void silent() override {
    store_.client_->skip_member("the watch stream was silent for " +
                                std::to_string(silence().count()) + " ms");
  }
  std::chrono::milliseconds silence() const override {
    return store_.client_->loop_watch_silence();
  }
  std::vector<std::string> values() const { return awaited_->result(); }

 private:
  EtcdStore& store_;
  const std::vector<std::string>& keys_;
  Clock::time_point deadline_;
  std::unique_ptr<EtcdKeysAwaited> awaited_;
};

Task<std::optional<std::vector<std::string>>> EtcdStore::wait_on_loop(
    std::vector<std::string> keys, std::chrono::milliseconds timeout, CancelSignal& cancel) {
  auto deadline = Clock::now() + timeout;
  struct Ends {  // however the wait ends, the client serves calls again
    EtcdClient& client;
    ~Ends() { client.end_loop_watch(); }
  } ends{*client_};
  KeysStream stream(*this, keys, deadline);
  bool all_there = co_await follow_etcd_stream(stream, deadline, cancel);
  std::optional<std::vector<std::string>> values;
  if (all_there) values = stream.values();
  co_return values;
}

}  // namespace ddprun::store
