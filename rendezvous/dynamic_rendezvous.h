#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "rendezvous/dynamic_joiner.h"
#include "rendezvous/rendezvous_handler.h"
#include "rendezvous/tcp_store_client.h"
#include "rendezvous/tcp_store_server.h"

namespace ddprun::rendezvous {

/// Elastic rendezvous (torchrun's c10d backend, done differently where torchrun
/// falls short): the agent at the endpoint hosts the rendezvous store, the others
/// connect; a DynamicJoiner runs the state machine over it; heartbeats are keys of
/// their own; the group-rank-0 agent hosts the workers' store.
///
/// Keys, under "ddprun/c10d/<run id>/": state, version, ver/<n>, hb/<node>,
/// round/<r>/master, round/<r>/over, round/<r>/done/<k>.
class DynamicRendezvous : public RendezvousHandler {
 public:
  struct Options {
    std::string run_id = "none";
    std::string endpoint_host = "localhost";
    int endpoint_port = 29400;
    std::optional<bool> is_host;  // unset: host if the endpoint can be bound here
    std::string local_addr;       // advertised address ("" = host name)
    DynamicConfig config;
    std::chrono::milliseconds join_timeout{600'000};
    std::chrono::milliseconds read_timeout{60'000};
    std::chrono::milliseconds heartbeat_interval{5'000};
    int heartbeat_misses = 3;
  };

  /// Hosts or connects to the rendezvous store (TimeoutError naming the endpoint)
  /// and starts heartbeating.
  explicit DynamicRendezvous(Options options);
  ~DynamicRendezvous() override;

  RendezvousInfo next_rendezvous(int round, int local_world_size) override;
  Store& store() override { return *client_; }
  std::unique_ptr<Store> connect() override;
  std::string round_prefix(int round) const override;
  void cancel() override;
  void close() override { joiner_->close(); }
  void start_next_round(int round, bool failure, const std::set<std::string>& alive) override;
  std::vector<std::string> dead_members(const RendezvousInfo& info) override;
  bool elastic() const override { return true; }
  std::chrono::milliseconds heartbeat_interval() const override {
    return options_.heartbeat_interval;
  }

  const std::string& node_id() const { return node_id_; }
  bool hosts_store() const override { return server_ != nullptr; }
  void linger(std::chrono::milliseconds max) override {
    if (server_) server_->wait_until_connections_at_most(2, max);  // our own
  }

 private:
  RendezvousInfo make_info(const DynamicState& state);
  void heartbeat_loop();
  std::string endpoint() const;

  Options options_;
  std::string prefix_;
  std::string node_id_;
  std::string address_;
  std::unique_ptr<TcpStoreServer> server_;        // the rendezvous store (host only)
  std::unique_ptr<TcpStoreServer> worker_store_;  // group rank 0 only
  std::unique_ptr<TcpStoreClient> client_;
  std::unique_ptr<TcpStoreClient> heartbeat_client_;
  std::unique_ptr<DynamicJoiner> joiner_;
  std::thread heartbeat_thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> cancelled_{false};
  // Liveness as this node sees it: node -> (last heartbeat value, when it changed).
  std::map<std::string, std::pair<std::string, std::chrono::steady_clock::time_point>> seen_;
};

}  // namespace ddprun::rendezvous
