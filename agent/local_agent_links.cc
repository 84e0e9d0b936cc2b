// Preflight's link check in the agent: the component (agent/preflight/link_check.h)
// probes; a stop signal meanwhile ends the probe, and the round then ends as signalled
// (run_rounds() tells the others).
#include "agent/local_agent_impl.h"

namespace ddprun::agent {

Task<void> LocalAgent::Impl::probe_links() {
  // On the heap: held in this frame, GCC 12 takes the frame's delete for a mismatched
  // one (docs/contributing.md).
  auto cancel = std::make_unique<CancelSignal>("link probe cancelled");
  try {
    co_await unless_signalled(links_->probe(attempt_->info, *round_, *cancel),
                              [c = cancel.get()] { c->cancel(); });
  } catch (const Signalled&) {
    // run_rounds() sees the signal and ends the job.
  }
}

}  // namespace ddprun::agent
