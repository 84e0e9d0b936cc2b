#include "rendezvous/etcd_state_store.h"

#include "rendezvous/generic_state_store.h"

namespace ddprun::rendezvous {

EtcdStateStore::EtcdStateStore(std::unique_ptr<EtcdClient> client, std::string prefix,
                               std::function<int64_t()> lease)
    : client_(std::move(client)), prefix_(std::move(prefix)), lease_(std::move(lease)) {}

// Version, epoch, state and the announcements for `round`: what a decision needs.
std::vector<EtcdOp> EtcdStateStore::reads(int round) const {
  std::string dir = announce_dir(prefix_, round);
  return {EtcdOp::range(prefix_ + "version"), EtcdOp::range(prefix_ + "epoch"),
          EtcdOp::range(prefix_ + "state"), EtcdOp::range(dir, etcd_prefix_end(dir))};
}

StateSnapshot EtcdStateStore::parse(const EtcdClient::TxnResult& r, int round) {
  if (r.ranges.size() != 4) {
    throw StoreError("etcd at " + client_->endpoints_text() + ": short transaction reply");
  }
  auto value = [&](size_t i) -> const EtcdKv* {
    return r.ranges[i].kvs.empty() ? nullptr : &r.ranges[i].kvs[0];
  };
  StateSnapshot s;
  s.revision = r.revision;
  if (const EtcdKv* v = value(0); v && !v->value.empty()) s.version = std::stoll(v->value);
  if (const EtcdKv* e = value(1); e && !e->value.empty()) s.epoch = std::stoll(e->value);
  if (const EtcdKv* state = value(2)) {
    s.raw = state->value;
    s.state = DynamicState::from_json(s.raw);
    s.state_revision = state->mod_revision;
  }
  std::vector<std::pair<std::string, std::string>> listed;
  for (const auto& kv : r.ranges[3].kvs) listed.emplace_back(kv.key, kv.value);
  listed_ = parse_announcements(announce_dir(prefix_, round), listed);
  listed_round_ = round;
  round_seen_ = s.state.round;
  return s;
}

StateSnapshot EtcdStateStore::read() {
  if (fresh_) {
    StateSnapshot s = std::move(*fresh_);
    fresh_.reset();
    return s;
  }
  // The announcements of the round seen last: the one forming, nearly always.
  return parse(client_->txn(std::nullopt, reads(round_seen_)), round_seen_);
}

bool EtcdStateStore::write(const StateSnapshot& from, const std::string& to,
                           bool wakes_participants, const std::optional<Announcement>& on_loss) {
  std::vector<EtcdOp> success{EtcdOp::put(prefix_ + "state", to),
                              EtcdOp::put(prefix_ + "version", std::to_string(from.version + 1))};
  if (wakes_participants) {
    success.push_back(EtcdOp::put(prefix_ + "epoch", std::to_string(from.epoch + 1)));
  }
  std::vector<EtcdOp> failure;
  if (on_loss) {
    failure.push_back(EtcdOp::put(announce_dir(prefix_, on_loss->round) + on_loss->node,
                                  std::to_string(on_loss->local_world_size), lease_()));
  }
  int round = from.state.round;
  for (auto& op : reads(round)) failure.push_back(std::move(op));
  auto r = client_->txn(EtcdCompare{prefix_ + "state", from.state_revision}, success, failure);
  if (!r.succeeded) {
    fresh_ = parse(r, round);
    return false;
  }
  StateSnapshot now;
  now.version = from.version + 1;
  now.epoch = from.epoch + (wakes_participants ? 1 : 0);
  now.raw = to;
  now.state = DynamicState::from_json(to);
  now.revision = r.revision;
  now.state_revision = r.revision;
  round_seen_ = now.state.round;
  fresh_ = std::move(now);
  listed_round_ = -1;  // not read with this write
  return true;
}

void EtcdStateStore::wait(const StateSnapshot& from, bool participant,
                          std::chrono::milliseconds timeout) {
  client_->watch(prefix_ + (participant ? "epoch" : "version"), "", from.revision + 1,
                 EtcdClient::Clock::now() + timeout, [](const EtcdEvent&) { return false; });
}

std::optional<std::vector<std::pair<std::string, int>>> EtcdStateStore::announced(int round) {
  if (listed_round_ != round) {
    std::string dir = announce_dir(prefix_, round);
    std::vector<std::pair<std::string, std::string>> listed;
    for (auto& kv : client_->range(dir, etcd_prefix_end(dir)).kvs) {
      listed.emplace_back(std::move(kv.key), std::move(kv.value));
    }
    listed_ = parse_announcements(dir, listed);
    listed_round_ = round;
  }
  return listed_;
}

}  // namespace ddprun::rendezvous
