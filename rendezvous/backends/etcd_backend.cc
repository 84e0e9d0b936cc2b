#include "rendezvous/backends/etcd_backend.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <spdlog/spdlog.h>

#include "rendezvous/host_clock.h"
#include "rendezvous/join/etcd_state_store.h"
#include "store/etcd/etcd_store.h"

namespace ddprun::rendezvous {

EtcdBackend::EtcdBackend(RendezvousParams params)
    : params_(std::move(params)), probe_(params_.etcd_endpoints, params_.read_timeout) {}

EtcdBackend::~EtcdBackend() = default;

int64_t EtcdBackend::lease() const { return lease_keeper_ ? lease_keeper_->lease() : 0; }

Task<void> EtcdBackend::leave(CancelSignal& cancel) {
  if (!lease_keeper_) co_return;
  int64_t lease = lease_keeper_->stop();
  lease_keeper_.reset();
  try {
    co_await probe_.revoke_lease_on_loop(lease, cancel);
  } catch (const Error& e) {
    spdlog::debug("could not revoke the etcd lease: {}", e.what());
  }
}

std::string EtcdBackend::prefix(const std::string& run_id) const {
  return params_.etcd_prefix + "/" + run_id + "/";
}

std::unique_ptr<StateStore> EtcdBackend::state_store(store::LoopStore&, const std::string& prefix,
                                                     std::chrono::milliseconds timeout) {
  // Announcing pays from 8 nodes on (this machine, one etcd: 8 agents form their round in
  // the same time either way, 32 in 231 ms instead of 277 ms, 512 in 5.6 s instead of
  // 20 s); in a smaller job each node writing itself in saves a watch opened on the
  // way (2 agents: 17 ms instead of 82 ms).
  bool announce = params_.max_nodes >= 8;
  auto state = std::make_unique<EtcdStateStore>(
      std::make_unique<store::EtcdClient>(params_.etcd_endpoints, timeout), prefix,
      [this] { return lease(); }, announce);
  state_store_ = state.get();
  return state;
}

std::unique_ptr<store::Store> EtcdBackend::connect(std::chrono::milliseconds timeout,
                                                   int64_t newer_than) {
  return new_store(timeout, newer_than);
}

std::unique_ptr<store::LoopStore> EtcdBackend::connect_on_loop(std::chrono::milliseconds timeout,
                                                               int64_t newer_than) {
  return on_loop(new_store(timeout, newer_than));
}

std::unique_ptr<store::EtcdStore> EtcdBackend::new_store(std::chrono::milliseconds timeout,
                                                         int64_t newer_than) const {
  return std::make_unique<store::EtcdStore>(
      std::make_unique<store::EtcdClient>(params_.etcd_endpoints, timeout), "", newer_than);
}

std::string EtcdBackend::endpoint() const { return probe_.endpoints_text(); }

std::chrono::seconds EtcdBackend::lease_ttl() const {
  auto ttl = std::chrono::duration<double>(params_.heartbeat_interval * params_.heartbeat_misses);
  return std::chrono::seconds(std::max<int64_t>(1, static_cast<int64_t>(std::ceil(ttl.count()))));
}

Task<void> EtcdBackend::start_liveness(std::string prefix, std::string node, CancelSignal& cancel) {
  alive_key_ = prefix + "alive/" + node;
  auto granted_at = store::EtcdLeaseKeeper::Clock::now();
  int64_t lease = co_await probe_.grant_lease_on_loop(lease_ttl().count(), cancel);
  // Renewed from a thread of its own: the node's proof of life must not depend on
  // what the agent's loop is doing (as C10dBackend's heartbeat).
  lease_keeper_ = std::make_unique<store::EtcdLeaseKeeper>(
      std::make_unique<store::EtcdClient>(
          params_.etcd_endpoints,
          std::max(params_.heartbeat_interval * 2, std::chrono::milliseconds(2000))),
      lease, lease_ttl(), granted_at, params_.heartbeat_interval,
      [key = alive_key_](store::EtcdClient& client, int64_t regained) {
        client.put(key, "1", regained);
      });
  // The run's one tracking writer is the first agent to get here; the same
  // transaction takes the joiner's first look (the state's head where it keeps one, a
  // few bytes; else the state), and its reply's Date is preflight's reading of etcd's
  // clock: each a request per node fewer as a job starts.
  bool primes = state_store_ != nullptr;
  std::vector<store::EtcdOp> success{store::EtcdOp::put(prefix + "primary", node),
                                     store::EtcdOp::put(alive_key_, "1", lease)};
  std::vector<store::EtcdOp> failure{store::EtcdOp::put(alive_key_, "1", lease)};
  if (primes) {
    for (const auto& op : state_store_->first_reads()) {
      success.push_back(op);
      failure.push_back(op);
    }
  }
  std::optional<store::EtcdCompare> unclaimed = store::EtcdCompare{prefix + "primary", 0};
  int64_t sent = wall_clock_ms();
  auto r = co_await probe_.txn_on_loop(unclaimed, std::move(success), std::move(failure), cancel);
  start_clock_offset_ = http_date_offset(sent, wall_clock_ms(), probe_.last_date());
  primary_ = r.succeeded;
  if (primes) state_store_->prime(r);
}

Task<void> EtcdBackend::forget_history(std::string prefix, int round, bool first_member,
                                       CancelSignal& cancel) {
  if (!first_member || round < 2) co_return;
  const std::vector<std::string> dirs{"round/", "joining/", "forming/"};
  for (const auto& dir : dirs) {
    std::string old = prefix + dir + std::to_string(round - 2) + "/";
    std::string end = store::etcd_prefix_end(old);
    try {
      co_await probe_.remove_on_loop(old, end, cancel);
    } catch (const StoreError& e) {
      spdlog::debug("rendezvous: the keys under {} stay: {}", old, e.what());
    }
  }
}

std::vector<std::string> EtcdBackend::liveness_keys(const std::string& prefix,
                                                    const std::vector<std::string>& members) {
  return member_keys(prefix + "alive/", members);
}

// A member's key lives on its lease: gone once the member stopped renewing it.
std::vector<std::string> EtcdBackend::dead_members(
    const std::vector<std::string>& members, const std::vector<std::optional<std::string>>& values,
    const std::string& self) {
  std::vector<std::string> dead;
  for (size_t i = 0; i < members.size() && i < values.size(); ++i) {
    if (members[i] != self && !values[i]) dead.push_back(members[i]);
  }
  return dead;
}

Task<std::optional<std::chrono::milliseconds>> EtcdBackend::clock_offset(
    store::LoopStore& /*client*/, CancelSignal& cancel) {
  std::optional<std::chrono::milliseconds> offset =
      std::exchange(start_clock_offset_, std::nullopt);
  if (offset) co_return offset;
  try {
    std::string key = params_.etcd_prefix;
    std::string whole_key;
    int64_t sent = wall_clock_ms();
    co_await probe_.range_on_loop(key, whole_key, cancel);  // its reply carries the date
    offset = http_date_offset(sent, wall_clock_ms(), probe_.last_date());
  } catch (const StoreError& e) {
    spdlog::debug("could not read etcd's clock: {}", e.what());
  }
  co_return offset;
}

}  // namespace ddprun::rendezvous
