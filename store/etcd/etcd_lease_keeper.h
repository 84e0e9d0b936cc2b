#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>

#include "common/periodic_thread.h"
#include "store/etcd/etcd_client.h"

namespace ddprun::store {

/// Keeps an etcd lease alive from a thread of its own (a node's proof of life must not
/// wait on its agent's loop). A renewal is due `interval` after the sending of the last
/// one that got through (at once, where that one's answer took longer), and waits for
/// its answer as long as the lease lasts (`ttl` from that sending): under a loaded etcd
/// a late answer still renews it, where giving up to ask again only adds to the load.
/// A renewal that fails sooner (its member down) is tried again a second later, on the
/// next member, not an interval later. Where etcd says the lease is gone, a new one is
/// granted and handed to `regained` (to put the holder's keys under it again).
///
/// Thread-safety: lease() from any thread; stop() from the owner's.
class EtcdLeaseKeeper {
 public:
  using Clock = std::chrono::steady_clock;
  using Regained = std::function<void(EtcdClient& client, int64_t lease)>;

  /// `lease` was granted by a request sent at `granted_at`, for `ttl`.
  EtcdLeaseKeeper(std::unique_ptr<EtcdClient> client, int64_t lease, std::chrono::seconds ttl,
                  Clock::time_point granted_at, std::chrono::milliseconds interval,
                  Regained regained);
  ~EtcdLeaseKeeper() { stop(); }
  EtcdLeaseKeeper(const EtcdLeaseKeeper&) = delete;
  EtcdLeaseKeeper& operator=(const EtcdLeaseKeeper&) = delete;

  int64_t lease() const { return lease_; }
  /// Ends the renewals (one in flight fails at once): the lease held last.
  int64_t stop();

 private:
  void keep(const PeriodicThread& thread);   // until stopped
  void renew(const PeriodicThread& thread);  // until etcd answered, or stopped

  std::unique_ptr<EtcdClient> client_;
  std::atomic<int64_t> lease_;
  const std::chrono::seconds ttl_;
  const std::chrono::milliseconds interval_;
  Clock::time_point renewed_at_;  // the sending of the last renewal that got through
  Regained regained_;
  std::unique_ptr<PeriodicThread> thread_;  // last: stopped before the rest goes
};

}  // namespace ddprun::store
