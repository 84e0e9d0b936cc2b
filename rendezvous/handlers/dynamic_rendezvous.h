#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "common/cancel_signal.h"
#include "rendezvous/backends/rendezvous_backend.h"
#include "rendezvous/join/dynamic_joiner.h"
#include "rendezvous/rendezvous_handler.h"
#include "rendezvous/rendezvous_params.h"
#include "store/tcpstore/tcp_store_server.h"

namespace ddprun::rendezvous {

/// Elastic rendezvous (torchrun's c10d and etcd backends, done differently where
/// torchrun falls short): a DynamicJoiner runs the state machine over the backend's
/// store (a TCPStore one agent hosts, or etcd), the backend tells who is alive, and
/// the group-rank-0 agent hosts the workers' store.
///
/// Keys, under the backend's prefix for the run: state, version, ver/<n>, the
/// backend's liveness keys, round/<r>/master, round/<r>/over, round/<r>/done/<k>.
class DynamicRendezvous : public RendezvousHandler {
 public:
  /// Binds the workers' store and readies the connection through the backend (its
  /// requests are made on the loop); start() before anything else.
  DynamicRendezvous(RendezvousParams params, std::unique_ptr<RendezvousBackend> backend);
  ~DynamicRendezvous() override;

  /// Starts showing this node alive and learns whether it is the run's primary agent:
  /// the backend's first requests, awaited on the loop.
  Task<void> start(CancelSignal& cancel);

  Task<RendezvousInfo> next_rendezvous(int round, int local_world_size) override;
  store::LoopStore& loop_store() override { return *client_; }
  /// Members of an elastic round watch each other's liveness; the first node to
  /// begin the next round does so for everyone.
  std::unique_ptr<RoundCoordinator> coordinate(const RendezvousInfo& info,
                                               boost::asio::io_context& io, Clock& clock) override;
  void cancel() override;
  /// Close the run (as finished or as failed) where this agent hosts it, then linger
  /// until the others have left (at most a few seconds); where the state outlives the
  /// agents, close it as failed (the first agent to claim it: once is enough and none
  /// is special; a job that finished was closed by the node that set its last round's
  /// "all_done", just before).
  Task<void> finish_job(CancelSignal& cancel) override;
  Task<void> job_failed(CancelSignal& cancel) override;
  Task<void> keep_out(std::string reason, CancelSignal& cancel) override;
  Task<void> leave(CancelSignal& cancel) override { return backend_->leave(cancel); }
  Task<std::optional<std::chrono::milliseconds>> clock_offset(CancelSignal& cancel) override;
  std::vector<ServedStore> served_stores() const override;

  std::string node_id() const override { return node_id_; }
  std::string address() const override { return address_; }
  bool primary() const override { return primary_; }
  bool waiting_as_spare() const override { return joiner_ && joiner_->spare(); }

 private:
  RendezvousInfo make_info(const JoinedRound& joined);
  Task<void> end_job(bool failed, CancelSignal& cancel);
  Task<void> count_failure(std::string reason, CancelSignal& cancel);
  Task<std::vector<std::string>> dead_among(std::vector<std::string> nodes, CancelSignal& cancel);
  void say_shared_addresses(const std::vector<std::string>& members);

  const RendezvousParams params_;
  std::unique_ptr<RendezvousBackend> backend_;
  std::string prefix_;
  std::string node_id_;
  // The members the last round's seat named for this node to check (group rank, id).
  std::vector<std::pair<int, std::string>> watched_;
  int watched_round_ = -1;
  std::string address_;
  bool said_shared_ = false;                             // say_shared_addresses() said it
  std::unique_ptr<store::TcpStoreServer> worker_store_;  // serves the workers at group rank 0
  std::unique_ptr<store::LoopStore> client_;
  std::unique_ptr<DynamicJoiner> joiner_;
  CancelSignal cancel_{"rendezvous cancelled"};
  bool primary_ = false;
  // etcd: whether this node wrote the end that ended the job (the last round's final
  // end), as its round learnt it; empty: not known. Its writer closes a failed run.
  std::optional<bool> final_end_mine_;
};

}  // namespace ddprun::rendezvous
