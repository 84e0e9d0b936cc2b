#include "rendezvous/join/etcd_state_store.h"

#include <algorithm>
#include <utility>

#include "rendezvous/join/generic_state_store.h"
#include "store/etcd/etcd_stream.h"

namespace ddprun::rendezvous {

namespace {

// "<version> <epoch>\n<state JSON>": the state key's value, and the epoch key's.
std::string encode(int64_t version, int64_t epoch, const std::string& state) {
  return std::to_string(version) + " " + std::to_string(epoch) + "\n" + state;
}

}  // namespace

EtcdStateStore::EtcdStateStore(std::unique_ptr<store::EtcdClient> client, std::string prefix,
                               std::function<int64_t()> lease, bool keep_head)
    : client_(std::move(client)),
      prefix_(std::move(prefix)),
      lease_(std::move(lease)),
      keep_head_(keep_head) {}

// The state and the announcements for `round`: what a decision needs.
std::vector<store::EtcdOp> EtcdStateStore::reads(int round) const {
  std::string dir = announce_dir(prefix_, round);
  return {store::EtcdOp::range(prefix_ + "state"),
          store::EtcdOp::range(prefix_ + "epoch", "", true),
          store::EtcdOp::range(dir, store::etcd_prefix_end(dir))};
}

StateSnapshot EtcdStateStore::snapshot(const store::EtcdKv& kv, const StateSnapshot& before) const {
  StateSnapshot s;
  size_t nl = kv.value.find('\n');
  size_t space = kv.value.find(' ');
  try {
    if (nl == std::string::npos || space > nl) throw std::invalid_argument("no header");
    s.version = std::stoll(kv.value.substr(0, space));
    s.epoch = std::stoll(kv.value.substr(space + 1, nl - space - 1));
    s.raw = kv.value.substr(nl + 1);
    s.state = DynamicState::decode(s.raw);
  } catch (const std::exception& e) {
    throw StoreError("etcd at " + client_->endpoints_text() + ": " + kv.key +
                     " does not hold a ddprun rendezvous state (" + e.what() + ")");
  }
  s.revision = kv.mod_revision;
  s.state_revision = kv.mod_revision;  // the epoch key is only ever written with the state
  // The epoch key was written in the same transaction exactly when the number moved.
  s.epoch_revision = s.epoch != before.epoch ? kv.mod_revision : before.epoch_revision;
  return s;
}

DynamicState EtcdStateStore::state_in(const std::string& value) const {
  return snapshot(store::EtcdKv{prefix_ + "state", value, 0, 0}, {}).state;
}

StateSnapshot EtcdStateStore::parse(const store::EtcdClient::TxnResult& r, int round) {
  if (r.ranges.size() != 3) {
    throw StoreError("etcd at " + client_->endpoints_text() + ": short transaction reply");
  }
  StateSnapshot s;
  if (!r.ranges[0].kvs.empty()) s = snapshot(r.ranges[0].kvs[0], {});
  s.revision = r.revision;
  s.epoch_revision = r.ranges[1].kvs.empty() ? 0 : r.ranges[1].kvs[0].mod_revision;
  remember_announced(round, r.revision, r.ranges[2].kvs);
  round_seen_ = s.state.round;
  return s;
}

void EtcdStateStore::remember_announced(int round, int64_t revision,
                                        const std::vector<store::EtcdKv>& kvs) {
  std::vector<std::pair<std::string, std::string>> listed;
  listed_newest_ = 0;
  for (const auto& kv : kvs) {
    listed.emplace_back(kv.key, kv.value);
    listed_newest_ = std::max(listed_newest_, kv.create_revision);
  }
  listed_ = parse_announcements(announce_dir(prefix_, round), listed);
  listed_round_ = round;
  listed_revision_ = revision;
}

Task<StateSnapshot> EtcdStateStore::read(CancelSignal& cancel) {
  StateSnapshot s;
  if (fresh_) {
    s = std::move(*fresh_);
    fresh_.reset();
  } else {
    // The announcements of the round seen last: the one forming, nearly always.
    int round = round_seen_;
    std::vector<store::EtcdOp> ops = reads(round);
    store::EtcdClient::TxnResult r = co_await client_->reads_on_loop(std::move(ops), cancel);
    s = parse(r, round);
  }
  co_return s;
}

Task<bool> EtcdStateStore::write(const StateSnapshot& from, const std::string& to, Wakes wakes,
                                 const std::optional<Announcement>& on_loss, CancelSignal& cancel) {
  bool wakes_participants = wakes != Wakes::kNobody;
  int64_t epoch = from.epoch + (wakes_participants ? 1 : 0);
  std::string value = encode(from.version + 1, epoch, to);
  std::string head = encode(from.version + 1, epoch, to.substr(0, to.find('\n')));
  std::vector<store::EtcdOp> success{store::EtcdOp::put(prefix_ + "state", value)};
  if (wakes_participants) {
    // "wake" wakes the participants with the head alone: an event carrying the whole
    // state to each of N waiting nodes moved N x N. "epoch" still carries it, for
    // agents of earlier versions, which wait on it.
    success.push_back(store::EtcdOp::put(prefix_ + "epoch", value));
    if (wakes == Wakes::kParticipants)
      success.push_back(store::EtcdOp::put(prefix_ + "wake", head));
  }
  success.push_back(store::EtcdOp::put(prefix_ + "head", head));
  int64_t taken = 0;
  if (listed_round_ == from.state.round &&
      (taken_round_ != listed_round_ || listed_newest_ > said_taken_)) {
    taken = listed_newest_;
    std::string key = prefix_ + "forming/" + std::to_string(listed_round_) + "/taken";
    success.push_back(store::EtcdOp::put(key, std::to_string(taken)));
  }
  std::vector<store::EtcdOp> failure;
  if (on_loss) {
    failure.push_back(store::EtcdOp::put(announce_dir(prefix_, on_loss->round) + on_loss->node,
                                         std::to_string(on_loss->local_world_size), lease_()));
  }
  int round = from.state.round;
  for (auto& op : reads(round)) failure.push_back(std::move(op));
  std::optional<store::EtcdCompare> unchanged =
      store::EtcdCompare{prefix_ + "state", from.state_revision};
  auto r = co_await client_->txn_on_loop(unchanged, std::move(success), std::move(failure), cancel);
  if (!r.succeeded) {
    fresh_ = parse(r, round);
    co_return false;
  }
  if (taken > 0) {
    said_taken_ = taken;
    taken_round_ = from.state.round;
  }
  wake_later_ = wakes == Wakes::kParticipantsLater ? head : "";
  fresh_ = snapshot(store::EtcdKv{prefix_ + "state", value, 0, r.revision}, from);
  written_head_ = head_in(*fresh_);
  round_seen_ = fresh_->state.round;
  listed_round_ = -1;  // not read with this write
  co_return true;
}

Task<void> EtcdStateStore::wait(const StateSnapshot& from, bool participant,
                                std::chrono::milliseconds timeout, CancelSignal& cancel) {
  // A participant wakes on "wake", which holds the head only: the next read() reads
  // the state, where it needs it at all (most read only their seat). Otherwise the
  // event carries the state written: the next read() needs no request. No event
  // before the timeout: take `from` as still the state (if the watch came too late to
  // see a change, the guess costs one lost write, which brings the state back).
  struct Ends {  // however the watch ends, the client serves calls again
    store::EtcdClient& client;
    ~Ends() { client.end_loop_watch(); }
  } ends{*client_};
  std::string key = prefix_ + (participant ? "wake" : "state");
  client_->begin_loop_watch(key, "", from.revision + 1);
  store::EtcdEventStream stream(*client_, [&](const store::EtcdEvent& e) {
    if (e.deleted) return true;
    if (!participant) fresh_ = snapshot(e.kv, from);
    return false;
  });
  auto deadline = std::chrono::steady_clock::now() + timeout;
  bool changed = true;
  try {
    changed = co_await store::follow_etcd_stream(stream, deadline, cancel);
  } catch (const store::EtcdCompactedError&) {
    co_return;  // that history is gone: the next read() reads
  }
  if (!changed && !participant) fresh_ = from;
}

Task<void> EtcdStateStore::wake(CancelSignal& cancel) {
  if (wake_later_.empty()) co_return;
  std::string key = prefix_ + "wake";
  co_await client_->put_on_loop(std::move(key), std::exchange(wake_later_, ""), cancel);
}

Task<std::vector<std::pair<std::string, int>>> EtcdStateStore::announced(int round,
                                                                         CancelSignal& cancel) {
  if (listed_round_ != round) {
    std::string dir = announce_dir(prefix_, round);
    std::string end = store::etcd_prefix_end(dir);
    auto r = co_await client_->range_on_loop(dir, end, cancel);
    remember_announced(round, r.revision, r.kvs);
  }
  co_return listed_;
}

void EtcdStateStore::prime(const store::EtcdClient::TxnResult& r) {
  if (keep_head_) {
    primed_head_ = r;
  } else {
    fresh_ = parse(r, round_seen_);
  }
}

Task<std::optional<StateHead>> EtcdStateStore::head(int round, std::vector<std::string> with,
                                                    CancelSignal& cancel) {
  auto primed = std::exchange(primed_head_, std::nullopt);  // good for the next call only
  if (primed && round < 0 && with.empty()) co_return parse_head(*primed, -1, 0);
  store::EtcdClient::TxnResult r = co_await client_->reads_on_loop(head_reads(round, with), cancel);
  co_return parse_head(r, round, with.size());
}

// The head, the state's and the epoch's existence, the announcements `round`'s writers
// took in (where `round` >= 0), then the keys `with`.
std::vector<store::EtcdOp> EtcdStateStore::head_reads(int round,
                                                      const std::vector<std::string>& with) const {
  std::vector<store::EtcdOp> ops{store::EtcdOp::range(prefix_ + "head"),
                                 store::EtcdOp::range(prefix_ + "state", "", true),
                                 store::EtcdOp::range(prefix_ + "epoch", "", true)};
  if (round >= 0)
    ops.push_back(store::EtcdOp::range(prefix_ + "forming/" + std::to_string(round) + "/taken"));
  for (const auto& key : with) ops.push_back(store::EtcdOp::range(key));
  return ops;
}

std::optional<StateHead> EtcdStateStore::parse_head(const store::EtcdClient::TxnResult& r,
                                                    int round, size_t with) const {
  size_t own = round >= 0 ? 4 : 3;
  if (r.ranges.size() < own + with) {
    throw StoreError("etcd at " + client_->endpoints_text() + ": short transaction reply");
  }
  StateHead h;
  h.revision = r.revision;
  if (!r.ranges[2].kvs.empty()) h.epoch_revision = r.ranges[2].kvs[0].mod_revision;
  for (size_t i = own; i < own + with; ++i) {
    if (r.ranges[i].kvs.empty()) {
      h.with.emplace_back();
    } else {
      h.with.emplace_back(r.ranges[i].kvs[0].value);
    }
  }
  if (!r.ranges[0].kvs.empty()) {
    StateSnapshot line = snapshot(r.ranges[0].kvs[0], {});
    h.exists = true;
    h.version = line.version;
    h.epoch = line.epoch;
    h.round = line.state.round;
    h.complete = line.state.complete;
    h.closed = line.state.closed;
    h.last_call_deadline_ms = line.state.last_call_deadline_ms;
  } else if (!r.ranges[1].kvs.empty()) {
    return std::nullopt;  // a state without a head (written by an older agent)
  }
  if (round >= 0 && !r.ranges[3].kvs.empty()) {
    try {
      h.taken_in = std::stoll(r.ranges[3].kvs[0].value);
    } catch (const std::exception&) {
      throw StoreError("etcd at " + client_->endpoints_text() + ": " + r.ranges[3].kvs[0].key +
                       " does not hold a revision");
    }
  }
  return h;
}

Task<void> EtcdStateStore::watch_for_put(std::string key, std::string range_end, int64_t revision,
                                         std::chrono::milliseconds timeout, CancelSignal& cancel) {
  struct Ends {  // however the watch ends, the client serves calls again
    store::EtcdClient& client;
    ~Ends() { client.end_loop_watch(); }
  } ends{*client_};
  client_->begin_loop_watch(key, range_end, revision + 1);
  store::EtcdEventStream stream(*client_, [](const store::EtcdEvent& e) { return e.deleted; });
  try {
    co_await store::follow_etcd_stream(stream, std::chrono::steady_clock::now() + timeout, cancel);
  } catch (const store::EtcdCompactedError&) {
    // that history is gone: the caller reads again
  }
}

Task<void> EtcdStateStore::wait_head(const StateHead& from, std::chrono::milliseconds timeout,
                                     CancelSignal& cancel) {
  co_await watch_for_put(prefix_ + "head", "", from.revision, timeout, cancel);
}

Task<int64_t> EtcdStateStore::announce(const Announcement& a, CancelSignal& cancel) {
  std::string folder = prefix_ + "forming/" + std::to_string(a.round) + "/folder";
  std::string key = announce_dir(prefix_, a.round) + a.node;
  std::string workers = std::to_string(a.local_world_size);
  int64_t lease = lease_();
  std::vector<store::EtcdOp> first{store::EtcdOp::put(folder, a.node, lease),
                                   store::EtcdOp::put(key, workers, lease)};
  std::vector<store::EtcdOp> later{store::EtcdOp::put(key, workers, lease)};
  std::optional<store::EtcdCompare> nobody = store::EtcdCompare{folder, 0};
  auto r = co_await client_->txn_on_loop(nobody, std::move(first), std::move(later), cancel);
  co_return r.succeeded ? 1 : r.revision;
}

// The folder's key, by its revision: put by the first to announce (its lease with it:
// gone with that node) and again by each that took over.
Task<StateHeads::Folding> EtcdStateStore::folding(int round, CancelSignal& cancel) {
  std::string folder = prefix_ + "forming/" + std::to_string(round) + "/folder";
  std::string none;
  auto now = co_await client_->range_on_loop(folder, none, cancel);
  Folding f;
  int64_t revision = now.kvs.empty() ? 0 : now.kvs[0].mod_revision;
  f.token = std::to_string(revision);
  co_return f;
}

Task<bool> EtcdStateStore::take_over_folding(const Announcement& a, int64_t slot,
                                             const std::string& from, CancelSignal& cancel) {
  (void)slot;
  std::string folder = prefix_ + "forming/" + std::to_string(a.round) + "/folder";
  std::optional<store::EtcdCompare> as_read = store::EtcdCompare{folder, std::stoll(from)};
  std::vector<store::EtcdOp> claim{store::EtcdOp::put(folder, a.node, lease_())};
  std::vector<store::EtcdOp> otherwise;
  auto r = co_await client_->txn_on_loop(as_read, std::move(claim), std::move(otherwise), cancel);
  co_return r.succeeded;
}

Task<void> EtcdStateStore::wait_announced(int round, std::chrono::milliseconds timeout,
                                          CancelSignal& cancel) {
  std::string dir = announce_dir(prefix_, round);
  int64_t from = round == listed_round_ ? listed_revision_ : 0;
  co_await watch_for_put(dir, store::etcd_prefix_end(dir), from, timeout, cancel);
}

}  // namespace ddprun::rendezvous
