#include "store/etcd/etcd_lease_keeper.h"

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>

namespace ddprun::store {

EtcdLeaseKeeper::EtcdLeaseKeeper(std::unique_ptr<EtcdClient> client, int64_t lease,
                                 std::chrono::seconds ttl, Clock::time_point granted_at,
                                 std::chrono::milliseconds interval, Regained regained)
    : client_(std::move(client)),
      lease_(lease),
      ttl_(ttl),
      interval_(interval),
      renewed_at_(granted_at),
      regained_(std::move(regained)),
      // One tick that lasts until stop(): each renewal's time comes from the last one's.
      thread_(std::make_unique<PeriodicThread>("ddprun-lease", interval,
                                               PeriodicThread::First::kAtOnce,
                                               [this](const PeriodicThread& thread) {
                                                 keep(thread);
                                                 return false;
                                               })) {}

int64_t EtcdLeaseKeeper::stop() {
  thread_->stop([this] { client_->interrupt(); });
  return lease_;
}

void EtcdLeaseKeeper::keep(const PeriodicThread& thread) {
  while (true) {
    auto due = std::chrono::duration_cast<std::chrono::milliseconds>(renewed_at_ + interval_ -
                                                                     Clock::now());
    if (thread.rest(std::max(due, std::chrono::milliseconds(0)))) return;
    renew(thread);
  }
}

void EtcdLeaseKeeper::renew(const PeriodicThread& thread) {
  while (!thread.stopping()) {
    auto sent = Clock::now();
    // Past the lease's end the answer still says whether etcd kept it.
    auto until = std::max(renewed_at_ + ttl_, sent + interval_);
    try {
      if (!client_->keep_alive(lease_, until)) {
        // Cut off for longer than the lease: the others count this node gone. Come
        // back alive; the rendezvous decides what that means.
        spdlog::warn("etcd lease expired; taking a new one");
        int64_t lease = client_->grant_lease(ttl_.count());
        lease_ = lease;
        regained_(*client_, lease);
      }
      renewed_at_ = sent;
      return;
    } catch (const std::exception& e) {
      if (thread.stopping()) return;
      spdlog::debug("etcd keep-alive failed: {}", e.what());
    }
    if (thread.rest(std::chrono::seconds(1))) return;
  }
}

}  // namespace ddprun::store
