// What the agent does as a round forms, before its workers start: preflight's link
// check (agent/preflight/link_check.h), and the run told of the round, with the
// primary's run found (agent/shared_run/shared_run.h). A stop signal meanwhile ends
// either wait; the round then ends as signalled (run_rounds() tells the others).
#include "agent/local_agent_impl.h"

namespace ddprun::agent {

Task<void> LocalAgent::Impl::probe_links() {
  // On the heap: held in this frame, GCC 12 takes the frame's delete for a mismatched
  // one (docs/contributing.md).
  auto cancel = std::make_unique<CancelSignal>("link probe cancelled");
  try {
    co_await unless_signalled(links_->probe(attempt_->info, attempt_->round(), *cancel),
                              [c = cancel.get()] { c->cancel(); });
  } catch (const Signalled&) {
    // run_rounds() sees the signal and ends the job.
  }
}

Task<void> LocalAgent::Impl::tell_round_formed(const rendezvous::RendezvousInfo& info) {
  std::string primary_run;
  if (shared_run_) {
    auto cancel = std::make_unique<CancelSignal>("finding the run cancelled");
    primary_run = co_await unless_signalled(shared_run_->primary(*handler_, *cancel),
                                            [c = cancel.get()] { c->cancel(); });
  }
  tracking::FormedRound formed{
      info.round, info.restart_count, info.world_size, info.members, info.spares, {}, primary_run};
  for (const auto& q : info.quarantined) {
    formed.quarantined.push_back({q.node, static_cast<double>(q.until_ms) / 1000, q.reason});
  }
  services_.observer->rendezvous_complete(formed);
}

}  // namespace ddprun::agent
