// How the job ends on this node: ddprun's own stop signals (the workers stopped, the
// wait in progress cut short, the others told why within StopState::kLastWordsWait),
// and the rendezvous told that the job finished or failed.
#include <spdlog/spdlog.h>

#include "agent/local_agent_impl.h"

namespace ddprun::agent {

void LocalAgent::Impl::on_stop_signal(int sig) {
  if (stop_.signal() != 0) {
    spdlog::warn("received {} again; killing the workers now", signal_name(sig));
    runner_.stop(SIGKILL);
    return;
  }
  stop_.stop(sig, [this] { changed_.notify(); });
  if (attempt_ && attempt_->ending()) attempt_->ending_when_signalled = true;
  // One line says what the signal ends: the workers, or the wait for the other nodes.
  int workers = runner_.running_workers();
  if (phase_ == Phase::kAwaitingOthers) {
    spdlog::warn("received {} while waiting for the other nodes to finish", signal_name(sig));
  } else if (workers > 0 || !stop_.waiting()) {
    spdlog::warn("received {}; stopping {} worker(s)", signal_name(sig), workers);
  } else {
    spdlog::warn("received {} while waiting for the other nodes", signal_name(sig));
  }
  runner_.stop(sig);
  stop_.cancel_wait();
}

// The run is closed, as finished or as failed. The round's own connections go first:
// a host keeps its store up until the other nodes have left, counting the connections
// still open.
Task<void> LocalAgent::Impl::end_job(bool succeeded) {
  attempt_->close_round();
  if (succeeded) {
    co_await handler_->finish_job(stop_.after_stop());
  } else {
    co_await handler_->job_failed(stop_.after_stop());
  }
}

// A stop signal ends the job: the others are told, then the run is closed as failed.
Task<void> LocalAgent::Impl::end_signalled_job() {
  co_await attempt_->end_signalled();
  co_await end_job(false);
}

}  // namespace ddprun::agent
