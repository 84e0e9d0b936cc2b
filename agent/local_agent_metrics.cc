// The figures the agent's Prometheus endpoint serves (agent/metrics/metrics_endpoint.h
// serves them, with its own look at the ranks' steps): read at each scrape, from the
// attempt and the components that keep them.
#include <algorithm>

#include "agent/local_agent_impl.h"

namespace ddprun::agent {

JobMetrics LocalAgent::Impl::metrics_figures() {
  JobMetrics j;
  j.run_id = config_.run_id;
  j.backend = config_.metrics.backend;
  j.version = DDPRUN_VERSION;
  j.host = config_.host;
  j.workers_running = runner_.running_workers();
  j.hangs = hang_.hangs();
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
    j.spares = attempt_->spares ? static_cast<int>(attempt_->spares->waiting().size()) : 0;
    int first = info.first_rank;
    for (int i = 0; i < config_.spec.local_world_size; ++i) {
      JobMetrics::Rank r;
      r.rank = first + i;
      if (const auto& stragglers = attempt_->stragglers) {
        r.own_seconds_per_step = stragglers->own_per_step(i);
        r.straggler_score = stragglers->score(i);
      }
      j.ranks.push_back(r);
    }
  }
  if (auto split = goodput_.split(attempt_ ? attempt_->decided : std::nullopt)) {
    const tracking::TimeSplit& s = *split;
    j.goodput = JobMetrics::Goodput{s.goodput(),
                                    {{"startup", s.startup},
                                     {"productive", s.productive},
                                     {"lost", s.lost},
                                     {"hang_wait", s.hang_wait},
                                     {"restart", s.restart},
                                     {"shutdown", s.shutdown}}};
  }
  if (auto* observer = services_.observer) {
    if (auto counts = observer->record_counts()) j.records = {counts->ingested, counts->skipped};
  }
  if (handler_ && handler_->waiting_as_spare()) {
    j.spare = true;
    j.node_rank = -1;  // its last round's place (if it had one) is no longer its own
  }
  if (handler_) {
    for (auto& s : handler_->served_stores()) {
      j.stores.push_back({s.role, s.connections, std::move(s.requests)});
    }
  }
  return j;
}

}  // namespace ddprun::agent
