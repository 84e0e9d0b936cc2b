#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/cancel_signal.h"
#include "rendezvous/rendezvous_handler.h"
#include "rendezvous/rendezvous_params.h"
#include "store/loop_store.h"
#include "store/tcpstore/tcp_store_client.h"
#include "store/tcpstore/tcp_store_server.h"

namespace ddprun::rendezvous {

/// torchrun's static rendezvous: a fixed number of nodes with given ranks. Node 0
/// hosts the store at master_addr:master_port (port 0: a free port, published as
/// MASTER_PORT); the others connect to it, retrying until the join timeout.
/// Each round, every node writes its worker count under
/// "ddprun/static/round/<r>/node/<k>" and waits for all of them; node 0 then deletes
/// the previous round's worker keys (2.x workers use no attempt prefix) and marks the
/// round ready, which the others wait for before starting workers.
/// Keys of round `round` share this prefix.
std::string static_round_prefix(int round);

class StaticRendezvous : public RendezvousHandler {
 public:
  /// Node 0 binds the store here (throws StoreError naming the address); the others
  /// connect (TimeoutError naming the address when it never answers), or take
  /// `connected`, their client of node 0's store made already (open_store_client()).
  explicit StaticRendezvous(RendezvousParams params,
                            std::unique_ptr<store::TcpStoreClient> connected = nullptr);

  Task<RendezvousInfo> next_rendezvous(int round, int local_world_size) override;
  /// A single node's own connection is made here, when first asked for: its rounds
  /// need none.
  store::LoopStore& loop_store() override;
  std::unique_ptr<RoundCoordinator> coordinate(const RendezvousInfo& info,
                                               boost::asio::io_context& io, Clock& clock) override;
  bool primary() const override { return server_ != nullptr; }
  std::string address() const override { return params_.master_addr; }
  /// Node 0 keeps the store up until the other nodes have left (at most a few
  /// seconds), whether the job finished or failed: they read how it ended from it.
  Task<void> finish_job(CancelSignal& cancel) override;
  Task<void> job_failed(CancelSignal& cancel) override;
  /// The other nodes: node 0's clock, which its store answers with.
  Task<std::optional<std::chrono::milliseconds>> clock_offset(CancelSignal& cancel) override;
  /// Node 0's store, which the agents and the workers share.
  std::vector<ServedStore> served_stores() const override;
  void cancel() override;

  /// The port the store listens on (node 0) or is reached at.
  int port() const { return port_; }

 private:
  std::unique_ptr<store::TcpStoreClient> new_client() const;
  Task<void> serve_until_the_others_leave(CancelSignal& cancel);
  // The nodes' worker counts as the store held them at `keys`.
  std::vector<int> worker_counts(const std::vector<std::string>& keys,
                                 const std::vector<std::string>& values) const;
  // A round's ranks (static_round_ranks.cc): node 0 waits for every node's worker
  // count at `keys`, counts the ranks and opens the round; the others read their own.
  Task<RendezvousInfo> open_round(RendezvousInfo info, std::vector<std::string> keys);
  Task<RendezvousInfo> read_own_ranks(RendezvousInfo info, int local_world_size,
                                      std::vector<std::string> keys);
  // Why round `round` did not open within the join timeout: the node ranks whose keys
  // were not `there` (every node's, read then), or node 0 where none is missing.
  TimeoutError join_timed_out(const std::vector<std::optional<std::string>>& there,
                              int round) const;
  // The store, as messages name it: "<master_addr>:<port>".
  std::string where() const;

  const RendezvousParams params_;
  std::unique_ptr<store::TcpStoreServer> server_;  // node 0 only
  int port_ = 0;
  std::string own_host_;                      // node 0: where its own clients reach its store
  std::unique_ptr<store::LoopStore> client_;  // null until loop_store() for a single node
  CancelSignal cancel_{"rendezvous cancelled"};
};

}  // namespace ddprun::rendezvous
