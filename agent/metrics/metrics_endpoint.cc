#include "agent/metrics/metrics_endpoint.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "agent/metrics/exposition.h"
#include "common/error.h"
#include "common/logging.h"
#include "net/socket.h"
#include "rendezvous/join/dynamic_state.h"

namespace ddprun::agent {
namespace {

bool wildcard(const std::string& host) {
  return host == "0.0.0.0" || host == "::" || host == "[::]";
}

// Replaces `path` whole: Prometheus never reads half a list.
void write_whole(const std::string& path, const std::string& text) {
  std::string tmp = path + ".new." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out.flush()) {
      spdlog::warn("--metrics_sd_file: cannot write {}", tmp);
      std::remove(tmp.c_str());
      return;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    spdlog::warn("--metrics_sd_file: cannot replace {}", path);
    std::remove(tmp.c_str());
  }
}

}  // namespace

MetricsEndpoint::MetricsEndpoint(boost::asio::io_context& io, const AgentConfig& config,
                                 const WorkerProgress& workers, Clock& clock, Figures figures)
    : config_(config),
      workers_(workers),
      clock_(clock),
      figures_(std::move(figures)),
      steps_watch_(clock.make_timer()) {
  const auto& m = config_.metrics;
  try {
    listener_ = std::make_unique<net::HttpListener>(
        io, m.host, m.port.value_or(0),
        [this](std::string_view method, std::string_view target) -> net::HttpResponse {
          if (method != "GET" && method != "HEAD") return {405, "text/plain", "GET only\n"};
          std::string_view path = target.substr(0, target.find('?'));
          if (path == "/metrics") {
            return {200, Exposition::kContentType, render_metrics(now(), read_process_metrics())};
          }
          return {404, "text/plain", "ddprun's agent serves its metrics at /metrics\n"};
        },
        "default-src 'none'", "metrics");
  } catch (const std::exception& e) {
    // The port given is taken, or the host is not this one's: the flags are wrong (exit 2).
    throw UsageError("--metrics_port=" + std::to_string(m.port.value_or(0)) + " on " + m.host +
                     ": " + e.what());
  }
  std::string url = "http://" + net::host_port(m.host, port()) + "/metrics";
  notice("metrics at {}", url);
  look_at_steps();
}

void MetricsEndpoint::start_attempt() {
  steps_.start_attempt(config_.spec.local_world_size, clock_.now());
}

// The ranks' progress counters, each second: what /metrics says of their steps.
void MetricsEndpoint::look_at_steps() {
  if (workers_.running()) {
    auto now = clock_.now();
    for (int i = 0; i < config_.spec.local_world_size; ++i)
      steps_.observe(i, workers_.progress(i), now);
  }
  steps_watch_->start(kStepLookInterval, [this] { look_at_steps(); });
}

JobMetrics MetricsEndpoint::now() {
  JobMetrics j = figures_();
  auto at = clock_.now();
  for (size_t i = 0; i < j.ranks.size(); ++i) {
    j.ranks[i].seconds_since_progress = steps_.seconds_since_progress(static_cast<int>(i), at);
    j.ranks[i].step = steps_.step(static_cast<int>(i));
  }
  j.step_seconds = steps_.step_times();
  return j;
}

// Where Prometheus reaches a node's endpoint: --metrics_host, or where that listens
// everywhere, the node's own address.
std::string MetricsEndpoint::target_of(const std::string& node_id, const std::string& host,
                                       uint16_t port) const {
  std::string address = config_.metrics.host;
  if (wildcard(address)) address = node_id.empty() ? host : rendezvous::node_address(node_id);
  return net::host_port(address, port);
}

// Every agent in one file_sd_configs list, the members and the spares each a target
// group of its own: Prometheus labels each agent's series with its role.
void MetricsEndpoint::write_targets() const {
  nlohmann::json list = nlohmann::json::array();
  auto group = [&](const std::vector<std::string>& targets, const char* role) {
    if (targets.empty()) return;
    list.push_back(
        {{"targets", targets}, {"labels", {{"ddprun_run_id", config_.run_id}, {"role", role}}}});
  };
  group(members_, "member");
  group(spares_, "spare");
  write_whole(config_.metrics.sd_file, list.dump(2) + "\n");
}

void MetricsEndpoint::share(const rendezvous::RendezvousInfo& info, const std::string& self,
                            const std::string& host, rendezvous::RoundCoordinator& round) {
  if (config_.metrics.sd_file.empty()) return;
  std::string mine = target_of(self, host, port());
  lists_ = info.group_world_size < 2 || info.group_rank == 0;
  // Group rank 0 writes the file: the others only share their endpoint.
  if (!lists_) return round.gather("metrics_endpoint", mine, kEndpointGather, {});
  members_.clear();
  spares_changed(info.spares);
  if (info.group_world_size < 2) {
    members_ = {mine};
    return write_targets();
  }
  round.gather("metrics_endpoint", mine, kEndpointGather,
               [this](const std::vector<std::string>& parts) {
                 members_.clear();
                 for (const auto& p : parts) {
                   if (!p.empty()) members_.push_back(p);
                 }
                 write_targets();
               });
}

void MetricsEndpoint::spares_changed(const std::vector<std::string>& spares) {
  uint16_t shared_port = config_.metrics.port.value_or(0);
  if (!lists_ || shared_port == 0) return;  // a port each agent picked is not known
  spares_.clear();
  for (const auto& id : spares) spares_.push_back(target_of(id, "", shared_port));
  if (!members_.empty()) write_targets();
}

}  // namespace ddprun::agent
