#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/preflight/node_checks.h"
#include "agent/preflight/preflight_options.h"
#include "common/cancel_signal.h"
#include "common/coro.h"

namespace ddprun::agent {

/// This node's preflight, for the job: before each join, whether it is fit to run
/// workers (agent/preflight/node_checks.h), a worker of its last attempt left behind
/// unkillable, the site's --health_check (before the first join only, so that a restart
/// never waits for it), and once the rendezvous host answers, its clock against that
/// host's. The agent decides what an unfit node does (it says why, tells the others
/// and leaves).
///
/// Thread-safety: the loop's thread only.
class NodePreflight {
 public:
  /// `probe` null: this machine's own (PosixNodeProbe).
  NodePreflight(const PreflightOptions& options, NodeProbe* probe, std::string host);

  /// What is wrong with this node before a join (empty: fit). `left_behind`: the
  /// workers SIGKILL could not end (in D state: the host is unhealthy, and a restart
  /// here would meet the same). `first`: the node's first join, when the site's check
  /// runs; `cancel` ends it at once (it throws then).
  Task<std::vector<Finding>> findings(const std::vector<std::string>& left_behind, bool first,
                                      CancelSignal& cancel);
  /// Whether the clock is checked (then, before the first join, the agent asks the
  /// rendezvous host for the offset).
  bool checks_clock() const;
  /// The clock check's finding from `offset` (this node's wall clock to the rendezvous
  /// host's; none where it could not be read): far off, the node is unfit; off by a
  /// little, a warning is said.
  std::optional<Finding> clock(std::optional<std::chrono::milliseconds> offset) const;
  /// Says on the console why this node failed its preflight; returns the cause the run
  /// and the other nodes are given.
  std::string say_unfit(const std::vector<Finding>& found) const;

 private:
  const PreflightOptions& options_;
  std::unique_ptr<NodeProbe> own_probe_;  // where none was given
  NodeProbe& probe_;
  const std::string host_;
};

}  // namespace ddprun::agent
