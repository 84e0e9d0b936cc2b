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
#include "rendezvous/round_coordinator.h"

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

  /// Listens now on --metrics_host:--metrics_port (says where: a port picked is warned
  /// of). Throws Error naming --metrics_port where it cannot.
  MetricsEndpoint(boost::asio::io_context& io, const AgentConfig& config,
                  const WorkerProgress& workers, Clock& clock, Figures figures);

  uint16_t port() const { return listener_->port(); }
  /// An attempt's workers start: their progress starts anew.
  void start_attempt();
  /// With --metrics_sd_file, as a round forms: every node shares where its endpoint is
  /// (`self`: this node's member id, for its address), and group rank 0 writes the list
  /// (a node that did not answer in time is left out).
  void share(const rendezvous::RendezvousInfo& info, const std::string& self,
             const std::string& host, rendezvous::RoundCoordinator& round);
  /// What a scrape serves: the agent's figures with this endpoint's own.
  JobMetrics now();

 private:
  void look_at_steps();

  const AgentConfig& config_;
  const WorkerProgress& workers_;
  Clock& clock_;
  Figures figures_;
  StepTracker steps_;
  std::unique_ptr<Timer> steps_watch_;
  std::unique_ptr<net::HttpListener> listener_;
};

}  // namespace ddprun::agent
