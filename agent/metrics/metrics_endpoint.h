#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>

#include "agent/agent_config.h"
#include "agent/metrics/job_metrics.h"
#include "agent/metrics/step_tracker.h"
#include "agent/worker_progress.h"
#include "common/clock.h"
#include "net/http_listener.h"
#include "rendezvous/rendezvous_handler.h"
#include "rendezvous/round/round_coordinator.h"

namespace ddprun::agent {

/// The agent's Prometheus endpoint (--metrics_port), for the job: served from the
/// agent's loop, what it serves read at each scrape; its own look at the ranks'
/// progress each second (their steps, step times); and with --metrics_sd_file, group
/// rank 0's list of every agent's endpoint for Prometheus' file-based discovery.
///
/// Thread-safety: the loop's thread only.
class MetricsEndpoint {
 public:
  /// The agent's figures at a scrape: the job, its round, one entry per local rank.
  using Figures = std::function<JobMetrics()>;
  static constexpr std::chrono::seconds kStepLookInterval{1};
  static constexpr std::chrono::seconds kEndpointGather{30};

  /// Listens now on --metrics_host:--metrics_port (a notice says where). Throws
  /// UsageError naming --metrics_port where it cannot.
  MetricsEndpoint(boost::asio::io_context& io, const AgentConfig& config,
                  const WorkerProgress& workers, Clock& clock, Figures figures);

  uint16_t port() const { return listener_->port(); }
  /// An attempt's workers start: their progress starts anew.
  void start_attempt();
  /// With --metrics_sd_file, as a round forms: every node shares where its endpoint is
  /// (`self`: this node's member id, for its address), and group rank 0 writes the list
  /// (a node that did not answer in time is left out), with the round's spares.
  void share(const rendezvous::RendezvousInfo& info, const std::string& self,
             const std::string& host, rendezvous::RoundCoordinator& round);
  /// Whether this node keeps the discovery file (group rank 0 of the last round).
  bool lists_targets() const { return lists_; }
  /// The spares waiting now, by node id: listed with the label role="spare" where every
  /// agent listens on the same --metrics_port (a spare is known by its id alone, which
  /// says its address but not a port it picked).
  void spares_changed(const std::vector<std::string>& spares);
  /// What a scrape serves: the agent's figures with this endpoint's own.
  JobMetrics now();

 private:
  void look_at_steps();
  std::string target_of(const std::string& node_id, const std::string& host, uint16_t port) const;
  void write_targets() const;

  const AgentConfig& config_;
  const WorkerProgress& workers_;
  Clock& clock_;
  Figures figures_;
  StepTracker steps_;
  std::unique_ptr<Timer> steps_watch_;
  std::unique_ptr<net::HttpListener> listener_;
  bool lists_ = false;
  std::vector<std::string> members_;  // host:port of each member's endpoint
  std::vector<std::string> spares_;   // and of each spare's
};

}  // namespace ddprun::agent
