#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "common/cancel_signal.h"
#include "common/coro.h"
#include "rendezvous/rendezvous_handler.h"
#include "rendezvous/round/round_coordinator.h"
#include "tracking/run_observer.h"

namespace ddprun::agent {

/// Preflight's link check (--preflight with `link`), for the job: once a round of
/// several nodes forms with members the last probe did not have, each node probes the
/// next one's link before its workers start, and the round's nodes share their
/// figures with group rank 0, which says which node or link is far slower than the
/// others and has the run keep every figure.
///
/// Thread-safety: the loop's thread only. `observer` may be null.
class LinkCheck {
 public:
  /// How long a node waits for the next one to reach its probe (one that never does is
  /// gone: the round ends for it anyway).
  static constexpr std::chrono::seconds kReadyWait{5};

  LinkCheck(boost::asio::io_context& io, tracking::RunObserver* observer)
      : io_(io), observer_(observer) {}

  /// This node's part for the round `info`. Returns early, probing nothing, once
  /// `cancel` is cancelled; a probe that fails is said. Throws nothing.
  Task<void> probe(const rendezvous::RendezvousInfo& info, rendezvous::RoundCoordinator& round,
                   CancelSignal& cancel);

 private:
  void judge(const std::vector<std::string>& nodes, const std::vector<std::string>& parts,
             int attempt);

  boost::asio::io_context& io_;
  tracking::RunObserver* observer_;
  std::vector<std::string> probed_;  // the members whose links were probed last
};

}  // namespace ddprun::agent
