// The agent's Prometheus endpoint (--metrics_port): served from the agent's loop, what
// it serves read at each scrape; and with --metrics_sd_file, group rank 0's list of
// every agent's endpoint for Prometheus' file-based discovery.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "agent/local_agent_impl.h"
#include "agent/metrics/exposition.h"
#include "common/error.h"
#include "net/socket.h"
#include "rendezvous/dynamic_state.h"

namespace ddprun::agent {
namespace {

constexpr std::chrono::seconds kStepLookInterval{1};
constexpr std::chrono::seconds kEndpointGather{30};

bool wildcard(const std::string& host) { return host == "0.0.0.0" || host == "::" || host == "[::]"; }

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

void LocalAgent::Impl::start_metrics() {
  const auto& m = config_.metrics;
  if (!m.port) return;
  try {
    metrics_ = std::make_unique<net::HttpListener>(
        io_, m.host, *m.port,
        [this](std::string_view method, std::string_view target) -> net::HttpResponse {
          if (method != "GET" && method != "HEAD") return {405, "text/plain", "GET only\n"};
          std::string_view path = target.substr(0, target.find('?'));
          if (path == "/metrics") {
            return {200, Exposition::kContentType, render_metrics(metrics_now(), read_process_metrics())};
          }
          return {404, "text/plain", "ddprun's agent serves its metrics at /metrics\n"};
        },
        "default-src 'none'", "metrics");
  } catch (const std::exception& e) {
    throw Error("--metrics_port=" + std::to_string(*m.port) + ": " + e.what());
  }
  std::string url = "http://" + net::host_port(m.host, metrics_->port()) + "/metrics";
  if (*m.port == 0) {
    spdlog::warn("metrics at {}", url);  // the port was picked: say which
  } else {
    spdlog::info("metrics at {}", url);
  }
  steps_watch_ = clock_.make_timer();
  look_at_steps();
}

// The ranks' progress counters, each second: what /metrics says of their steps.
void LocalAgent::Impl::look_at_steps() {
  if (runner_.running()) {
    auto now = clock_.now();
    for (int i = 0; i < config_.spec.local_world_size; ++i) steps_.observe(i, runner_.progress(i), now);
  }
  steps_watch_->start(kStepLookInterval, [this] { look_at_steps(); });
}

JobMetrics LocalAgent::Impl::metrics_now() {
  JobMetrics j;
  j.run_id = config_.run_id;
  j.backend = config_.metrics.backend;
  j.version = DDPRUN_VERSION;
  j.host = host_;
  j.workers_running = runner_.running_workers();
  j.hangs = hangs_;
  if (attempt_) {
    const auto& info = attempt_->info;
    j.node_rank = info.group_rank;
    j.round = info.round;
    j.nodes = info.group_world_size;
    j.world_size = info.world_size;
    j.restarts = info.restart_count;
    // Every round after the first began after a failure (a restart) or a change of
    // membership: the rest of the rounds are the latter.
    j.membership_changes = std::max(0, info.round - info.restart_count);
    j.spares = static_cast<int>(attempt_->spares.size());
    auto now = clock_.now();
    int first = info.first_rank;
    for (int i = 0; i < config_.spec.local_world_size; ++i) {
      JobMetrics::Rank r;
      r.rank = first + i;
      r.seconds_since_progress = steps_.seconds_since_progress(i, now);
      r.step = steps_.step(i);
      if (const auto& stragglers = attempt_->stragglers) {
        r.own_seconds_per_step = stragglers->own_per_step(i);
        r.straggler_score = stragglers->score(i);
      }
      j.ranks.push_back(r);
    }
  }
  j.step_seconds = steps_.step_times();
  if (auto split = goodput_.split(attempt_ ? attempt_->over : std::nullopt)) {
    const tracking::TimeSplit& s = *split;
    j.goodput = JobMetrics::Goodput{s.goodput(),
                                    {{"startup", s.startup},
                                     {"productive", s.productive},
                                     {"lost", s.lost},
                                     {"hang_wait", s.hang_wait},
                                     {"restart", s.restart}}};
  }
  if (observer_) {
    if (auto counts = observer_->record_counts()) j.records = {counts->ingested, counts->skipped};
  }
  if (handler_) {
    for (auto& s : handler_->served_stores()) {
      j.stores.push_back({s.role, s.connections, std::move(s.requests)});
    }
  }
  return j;
}

// With --metrics_sd_file, as each round forms: every node shares where its endpoint
// is, and group rank 0 writes the list (a node that did not answer in time is left out).
void LocalAgent::Impl::share_metrics_endpoint() {
  const auto& m = config_.metrics;
  if (!metrics_ || m.sd_file.empty()) return;
  const auto& info = attempt_->info;
  std::string address = m.host;
  if (wildcard(address)) {
    address = attempt_->self.empty() ? host_ : rendezvous::node_address(attempt_->self);
  }
  std::string mine = net::host_port(address, metrics_->port());
  auto write = [path = m.sd_file, run_id = config_.run_id](const std::vector<std::string>& parts) {
    nlohmann::json targets = nlohmann::json::array();
    for (const auto& p : parts) {
      if (!p.empty()) targets.push_back(p);
    }
    nlohmann::json list = nlohmann::json::array(
        {{{"targets", targets}, {"labels", {{"ddprun_run_id", run_id}}}}});
    write_whole(path, list.dump(2) + "\n");
  };
  if (info.group_world_size < 2) return write({mine});
  // Group rank 0 writes the file: the others only share their endpoint.
  if (info.group_rank != 0) return round_->gather("metrics_endpoint", mine, kEndpointGather, {});
  round_->gather("metrics_endpoint", mine, kEndpointGather, write);
}

}  // namespace ddprun::agent
