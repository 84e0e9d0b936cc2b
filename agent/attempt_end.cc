// How a round ends for this node: a worker's failure (or its death by a stop signal,
// told after a moment), ddprun's own stop signal, a lost store; the end agreed among
// the nodes, and what it means for this node.
#include <algorithm>

#include <spdlog/spdlog.h>

#include "agent/attempt.h"
#include "agent/local_agent.h"
#include "common/logging.h"

namespace ddprun::agent {

bool is_stop_signal_death(const AgentConfig& config, int exitcode) {
  const auto& stops = config.stop_signals;
  return std::find(stops.begin(), stops.end(), -exitcode) != stops.end();
}

// What this node tells the others when a stop signal ends the job.
RoundEnd Attempt::signalled_end() const {
  int sig = c_.stop.signal();
  RoundEnd end{RoundEnd::Kind::kFinal, 128 + sig,
               "node " + std::to_string(info.group_rank) + " (" + c_.host + ") received " +
                   signal_name(sig)};
  end.signalled = true;
  return end;
}

// The race of run()'s grace seen from the other nodes: a worker that died of a stop
// signal is told to them as a failure only when ddprun's own copy has not come within
// kStopSignalGrace (or by the attempt's end), so that a job stopped everywhere at
// once (scancel) ends "killed" on every node, not "failed" on those that heard first.
void Attempt::on_worker_failure(const FailureRecord& f) {
  if (c_.stop.signal() == 0 && is_stop_signal_death(c_.config, f.exitcode)) {
    if (!pending_failure_) {
      pending_failure_ = f;
      stop_grace_->start(kStopSignalGrace,
                         c_.changed.notifying([this] { tell_pending_failure(); }));
    }
    return;
  }
  tell_failure(f);
}

void Attempt::tell_pending_failure() {
  stop_grace_->cancel();
  if (!pending_failure_) return;
  FailureRecord f = *pending_failure_;
  pending_failure_.reset();
  if (c_.stop.signal() == 0 && !ending()) tell_failure(f);
}

void Attempt::tell_failure(const FailureRecord& f) {
  std::string what = "rank " + std::to_string(f.global_rank) + " (local_rank " +
                     std::to_string(f.local_rank) + ") on node " + std::to_string(info.group_rank) +
                     " (" + c_.host + ") exited with " + std::to_string(f.exitcode);
  bool budget_left = info.restart_count < c_.config.spec.max_restarts;
  if (budget_left && crash_loop()) {
    end_round({RoundEnd::Kind::kFinal, kNoProgressExitCode,
               what + "; " + std::to_string(c_.config.hang.max_no_progress_restarts) +
                   " restart(s) in a row " + c_.restarts.why() +
                   " (--max_no_progress_restarts): not restarting again"});
    return;
  }
  if (budget_left) round_->note_failure(what);
  end_round({budget_left ? RoundEnd::Kind::kRestart : RoundEnd::Kind::kFinal,
             shell_exit_code(f.exitcode), what},
            budget_left ? std::optional<NextRound>(NextRound{true, {}}) : std::nullopt);
}

// A crash loop: this attempt's failure ends a row of restarts, as long as
// --max_no_progress_restarts, whose ranks got no further than before (judged once an
// attempt, from this node's ranks' progress pages).
bool Attempt::crash_loop() {
  if (progress_judged_) return false;
  progress_judged_ = true;
  std::optional<int64_t> furthest;
  uint64_t timed = 0;
  for (int i = 0; i < c_.config.spec.local_world_size; ++i) {
    ProgressSample s = c_.runner.progress(i);
    if (s.step && (!furthest || *s.step > *furthest)) furthest = s.step;
    timed += s.timed.steps;
  }
  return c_.restarts.failed(info.restart_count, furthest, timed) >=
         c_.config.hang.max_no_progress_restarts;
}

// Tells the others why the round ends: the first writer wins, and the winner, once
// the store says which (or the end watch sees it first), is the attempt's end. The
// caller stops the workers meanwhile, as its own end asks. The `next` round is begun
// first, and the end says where it is: the others, told, announce themselves at once
// (told first, they waited for it to begin and read its head twice: three requests
// more for every node).
void Attempt::end_round(const RoundEnd& mine, std::optional<NextRound> next) {
  if (ending()) return;
  proposed_ = mine;
  c_.goodput.round_ends();
  if (next) round_->start_next_round(next->failure, next->lost);
  round_->end(mine,
              c_.changed.notifying([this](RoundEnd winner) { adopt_winner(std::move(winner)); }));
}

void Attempt::adopt_winner(RoundEnd winner) {
  if (!proposed_) return;  // adopted already
  proposed_.reset();
  decided = unless_dropped(std::move(winner));
}

// Before the attempt's end is acted on: the store's answer to this node's end, and to
// the requests that followed it (the next round's start, a failure counted). Once a
// stop signal came, they are awaited StopState::kLastWordsWait at most (a frozen store
// does not hold up a Ctrl-C); this node's own end stands then.
Task<void> Attempt::await_winner() {
  auto settled = std::make_shared<bool>(false);  // outlives this frame, for a late answer
  round_->after_requests(c_.changed.notifying([settled] { *settled = true; }));
  // The predicate holds a plain pointer: GCC 12 (docs/contributing.md) destroys a temporary made in
  // a co_await expression twice, which a copy of the shared_ptr does not survive.
  const bool* answered = settled.get();
  co_await c_.changed.until(
      [this, answered] { return (!proposed_ && *answered) || c_.stop.deadline_passed(); });
  if (proposed_) {
    spdlog::warn("could not tell the other nodes: no answer while stopping");
    adopt_winner(*proposed_);
  }
}

// The end as it applies to this node: when the others went on without it (it was
// frozen, or cut off from the rendezvous store), its workers belong to a world that no
// longer exists; they stop now, before they reach a collective or write a
// checkpoint, and the node leaves the job.
RoundEnd Attempt::unless_dropped(RoundEnd end) {
  if (!end.drops(self)) return end;
  dropped = true;
  // Left out on purpose (a straggler), or for silence.
  bool chosen = end.reason.rfind("lost node(s)", 0) != 0;
  RoundEnd out{
      RoundEnd::Kind::kFinal, kDroppedExitCode,
      chosen ? "this node was dropped from the job (" + end.reason + "); its workers are stopped"
             : "this node was dropped from the job: the other nodes heard no heartbeat "
               "from it (frozen, or cut off from the rendezvous store) and went on "
               "without it; its workers are stopped"};
  spdlog::error("{}", out.reason);
  return out;
}

void Attempt::on_round_end(RoundEnd end) {
  if (decided) return;  // adopted already
  // The store's winner, seen before its answer to this node's end: the workers are
  // being stopped already.
  if (proposed_) return adopt_winner(std::move(end));
  end = unless_dropped(std::move(end));
  if (!c_.stop.signal() && !c_.runner.idle()) spdlog::warn("stopping: {}", end.reason);
  decided = std::move(end);
  c_.goodput.round_ends();
  stop_workers(*decided);
}

void Attempt::on_store_lost(const std::string& what) {
  if (c_.runner.idle() || ending()) return;
  spdlog::error("{}; stopping the workers", what);
  store_lost = true;
  decided = RoundEnd{RoundEnd::Kind::kFinal, 1, what};
  c_.goodput.round_ends();
  c_.runner.stop(SIGTERM);
}

}  // namespace ddprun::agent
