#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "common/cancel_signal.h"
#include "common/coro.h"
#include "common/periodic_thread.h"
#include "rendezvous/backends/rendezvous_backend.h"
#include "rendezvous/rendezvous_params.h"
#include "store/tcpstore/tcp_store_client.h"
#include "store/tcpstore/tcp_store_server.h"

namespace ddprun::rendezvous {

/// torchrun's c10d way: the agent that can bind the endpoint (or is told it is the
/// host) hosts a TCPStore there and the others connect; liveness is a heartbeat
/// counter per node in a key of its own, judged stale after `misses` intervals.
///
/// The heartbeat is written by a thread of its own, on a connection of its own: it is
/// this node's proof of life to the others and must not depend on what the agent's
/// loop is doing (joining a round, capturing stacks, a slow store call); a frozen
/// agent (SIGSTOP, a frozen VM) stops it as it should.
class C10dBackend : public RendezvousBackend {
 public:
  /// Hosts the store when it should; connects (TimeoutError naming the endpoint)
  /// unless `connect_later`: then reach() makes the first connection.
  explicit C10dBackend(RendezvousParams params, bool connect_later = false);
  /// From a coroutine on the agent's loop: the first connection to the store, which may
  /// not be up yet (waits and retries are the loop's completions; `cancel` ends them
  /// with Error). Unless `join_only`, a node that may host but found the endpoint taken
  /// hosts it after all when nobody listens there. TimeoutError naming the endpoint
  /// after the connect timeout.
  Task<void> reach(CancelSignal& cancel, bool join_only = false);
  /// How long reach() waits for a store before trying to host it again.
  static constexpr std::chrono::seconds kHostAgain{2};
  ~C10dBackend() override;

  std::string prefix(const std::string& run_id) const override;
  std::unique_ptr<store::Store> connect(std::chrono::milliseconds timeout,
                                        int64_t newer_than) override;
  std::unique_ptr<store::LoopStore> connect_on_loop(std::chrono::milliseconds timeout,
                                                    int64_t newer_than) override;
  Task<void> start_liveness(std::string prefix, std::string node, CancelSignal& cancel) override;
  std::vector<std::string> liveness_keys(const std::string& prefix,
                                         const std::vector<std::string>& members) override;
  std::vector<std::string> dead_members(const std::vector<std::string>& members,
                                        const std::vector<std::optional<std::string>>& values,
                                        const std::string& self) override;
  void round_formed() override {
    seen_.clear();
    last_check_ = {};
  }
  /// On the host, from its own keys (no request).
  Task<void> forget_history(std::string prefix, int round, bool first_member,
                            CancelSignal& cancel) override;
  /// ddprun's store answers with its host's clock.
  Task<std::optional<std::chrono::milliseconds>> clock_offset(store::LoopStore& client,
                                                              CancelSignal& cancel) override;
  store::TcpStoreServer* server() override { return server_.get(); }
  bool hosted() const override { return true; }
  bool hosts_state() const override { return server_ != nullptr; }
  Task<void> linger(std::chrono::milliseconds max, CancelSignal& cancel) override;
  void stop_serving() override;
  std::string endpoint() const override;
  std::string where() const override { return "store at " + endpoint(); }

 private:
  bool try_hosting();  // false (the reason kept) where another listens or it is not ours
  bool heartbeat(const std::string& key, int64_t beat, const PeriodicThread& thread);
  std::unique_ptr<store::TcpStoreClient> connect_heartbeat() const;
  std::unique_ptr<store::TcpStoreClient> new_client(std::chrono::milliseconds timeout) const;

  const RendezvousParams params_;
  std::unique_ptr<store::TcpStoreServer> server_;
  std::string not_hosting_;  // why binding the endpoint here failed ("": hosting, or told not to)
  std::mutex heartbeat_mutex_;  // guards the pointer: replaced after a failure
  std::shared_ptr<store::TcpStoreClient> heartbeat_client_;  // writes ours
  std::unique_ptr<PeriodicThread> heartbeat_;                // from start_liveness()
  // Liveness as this node sees it: node -> (last heartbeat value, when it changed).
  std::map<std::string, std::pair<std::string, std::chrono::steady_clock::time_point>> seen_;
  std::chrono::steady_clock::time_point last_check_;  // of dead_members; {} = none yet
};

}  // namespace ddprun::rendezvous
