#pragma once

#include <functional>
#include <string>
#include <vector>

#include "agent/agent_config.h"
#include "agent/failure_summary.h"
#include "agent/log_dir.h"
#include "rendezvous/rendezvous_handler.h"
#include "rendezvous/round/round_end.h"
#include "tracking/run_observer.h"

namespace ddprun::agent {

class OrphanGuard;

/// How the job ends on this node, once: what the console says last (torchrun's failure
/// summary, the nodes kept out, why the job stopped), the run closed with its status
/// and root cause, the log directory removed where it was temporary and nobody needs it,
/// the orphan guard released. Each returns ddprun's exit status.
class JobEnd {
 public:
  JobEnd(const AgentConfig& config, const std::string& host, LogDir& log_dir, OrphanGuard* guard,
         tracking::RunObserver* observer, std::function<void()> on_end);

  int success() { return finish(0, "finished", "", true); }
  /// ddprun received `sig`.
  int signalled(int sig);
  /// A spare that was never needed: the job ended while it waited for a place.
  int spare(const rendezvous::SpareNotNeeded& ended);
  /// The last round ended as `over`, with this node's `failures` (its last round's
  /// `info`; `dropped`: the others went on without this node).
  int failure(const std::vector<FailureRecord>& failures, const rendezvous::RoundEnd& over,
              const rendezvous::RendezvousInfo& info, bool dropped);
  /// The run closed as `status` (`succeeded`: the log directory goes, whatever it holds).
  int finish(int code, const std::string& status, const std::string& root_cause,
             bool succeeded = false);

 private:
  const AgentConfig& config_;
  const std::string& host_;
  LogDir& log_dir_;
  OrphanGuard* guard_;
  tracking::RunObserver* observer_;
  std::function<void()> on_end_;  // before the run is closed
};

}  // namespace ddprun::agent
