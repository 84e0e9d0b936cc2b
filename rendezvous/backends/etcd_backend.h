#pragma once

#include <chrono>
#include <optional>

#include "rendezvous/backends/rendezvous_backend.h"
#include "rendezvous/join/etcd_state_store.h"
#include "rendezvous/rendezvous_params.h"
#include "store/etcd/etcd_client.h"
#include "store/etcd/etcd_lease_keeper.h"

namespace ddprun::rendezvous {

/// Rendezvous state in etcd (no agent is a single point of failure): keys under
/// "<key prefix>/<run id>/", and liveness through a lease per node that holds its
/// key "alive/<node>": kept alive every interval (store::EtcdLeaseKeeper), it expires
/// `misses` intervals after the node dies and etcd deletes the key.
class EtcdBackend : public RendezvousBackend {
 public:
  /// Takes the node's lease, which also checks that etcd answers (StoreError naming
  /// every endpoint tried, or why it refuses).
  explicit EtcdBackend(RendezvousParams params);
  ~EtcdBackend() override;

  std::string prefix(const std::string& run_id) const override;
  std::unique_ptr<store::Store> connect(std::chrono::milliseconds timeout,
                                        int64_t newer_than) override;
  std::unique_ptr<store::LoopStore> connect_on_loop(std::chrono::milliseconds timeout,
                                                    int64_t newer_than) override;
  std::unique_ptr<StateStore> state_store(store::LoopStore& client, const std::string& prefix,
                                          std::chrono::milliseconds timeout) override;
  /// Puts "alive/<node>" under the lease and claims "primary" in one transaction,
  /// which also takes the joiner's first look (EtcdStateStore::prime()) and etcd's
  /// clock (clock_offset()). The node's lease is granted here (the first request: etcd
  /// reachable, its v3 API, no authentication wanted).
  Task<void> start_liveness(std::string prefix, std::string node, CancelSignal& cancel) override;
  Task<bool> primary(store::LoopStore&, std::string, std::string, CancelSignal&) override {
    co_return primary_;
  }
  std::vector<std::string> liveness_keys(const std::string& prefix,
                                         const std::vector<std::string>& members) override;
  std::vector<std::string> dead_members(const std::vector<std::string>& members,
                                        const std::vector<std::optional<std::string>>& values,
                                        const std::string& self) override;
  /// Group rank 0 deletes the protocol keys and announcements of the round before the
  /// last one (a range delete each); the state's own keys are rewritten in place.
  Task<void> forget_history(std::string prefix, int round, bool first_member,
                            CancelSignal& cancel) override;
  /// Revokes the node's lease: its "alive" key goes now, not when the lease runs out.
  Task<void> leave(CancelSignal& cancel) override;
  /// From the Date of an etcd member's reply, to within its second: start_liveness()'s
  /// transaction's where it carried one (it asks nothing more), else a read's.
  Task<std::optional<std::chrono::milliseconds>> clock_offset(store::LoopStore& client,
                                                              CancelSignal& cancel) override;
  std::string endpoint() const override;
  std::string where() const override { return "etcd at " + endpoint(); }

 private:
  std::unique_ptr<store::EtcdStore> new_store(std::chrono::milliseconds timeout,
                                              int64_t newer_than) const;
  std::chrono::seconds lease_ttl() const;
  int64_t lease() const;  // 0 until start_liveness() and after leave()

  const RendezvousParams params_;
  store::EtcdClient probe_;  // liveness reads and the rounds' cleanup, both on the agent's loop
  std::string alive_key_;
  bool primary_ = false;
  std::optional<std::chrono::milliseconds> start_clock_offset_;  // see clock_offset()
  EtcdStateStore* state_store_ = nullptr;  // the joiner's, primed by start_liveness()
  std::unique_ptr<store::EtcdLeaseKeeper> lease_keeper_;  // from start_liveness() to leave()
};

}  // namespace ddprun::rendezvous
