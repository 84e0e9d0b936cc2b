// An attempt's run: the round's watches and the workers' start, the wait for the
// round's end, and the wait for the other nodes once this node's workers all succeeded.
#include "agent/attempt.h"

#include <utility>

#include <spdlog/spdlog.h>

namespace ddprun::agent {

Attempt::Attempt(rendezvous::RendezvousInfo i, std::string node_id,
                 std::unique_ptr<rendezvous::RoundCoordinator> round, AttemptContext context)
    : info(std::move(i)),
      self(std::move(node_id)),
      c_(context),
      round_(std::move(round)),
      stop_grace_(c_.clock.make_timer()) {
  spares = std::make_unique<SpareWatch>(info.spares, info.restart_count, *round_, c_.clock);
}

void Attempt::close_round() {
  stop_grace_->cancel();
  spares->stop();
  if (stragglers) stragglers->stop();
  round_.reset();
}

Task<void> Attempt::run(WorkerGroup group) {
  LoopCondition& changed = c_.changed;
  auto lost = changed.notifying([this](const std::string& what) { on_store_lost(what); });
  round_->watch_end(changed.notifying([this](RoundEnd end) { on_round_end(std::move(end)); }),
                    lost);
  round_->watch_members(
      changed.notifying([this](const std::vector<std::string>& dead) { on_dead(dead); }), lost);
  c_.runner.start(std::move(group),
                  changed.notifying([this](const FailureRecord& f) { on_worker_failure(f); }),
                  changed.notifying([this] { workers_done_ = true; }));
  if (c_.config.hang.enabled()) {
    c_.hang.start(changed.notifying([this](const Stall& stall) { on_hang(stall); }),
                  [this](std::chrono::milliseconds mine, const HangWatch::Adopt& adopt) {
                    round_->share_max("hang_longest_ms", mine.count(), [adopt](int64_t job) {
                      adopt(std::chrono::milliseconds(job));
                    });
                  });
  }
  stragglers = std::make_unique<StragglerWatch>(
      c_.config, info, c_.host, *round_, c_.runner, c_.clock, c_.observer,
      [this](const StragglerJudge::Score& worst, const std::string& member) {
        exclude_straggler(worst, member);
      });
  // A stack capture in progress ends before the attempt does, unless a stop signal
  // came: the job then ends within the grace period, not the capture's bounds.
  co_await changed.until(
      [this] { return workers_done_ && (!c_.hang.capturing() || c_.stop.signal() != 0); });
  // Workers that died of a stop signal mostly got it from whoever stops the whole job
  // (scancel signals every process of the step, a shell its process group): ddprun's
  // own copy is given a moment to arrive, so that the job ends "killed" by the signal
  // rather than "failed" with a rank as its root cause.
  const auto& failures = c_.runner.failures();
  if (c_.stop.signal() == 0 && !failures.empty() &&
      is_stop_signal_death(c_.config, failures.front().exitcode)) {
    co_await c_.signals.await_stop(kStopSignalGrace);
  }
  tell_pending_failure();
  co_await await_winner();
  c_.hang.stop();
  spares->stop();
  stragglers->stop();
  c_.goodput.end_attempt(decided);
  // A node whose workers all succeeded keeps watching for the round's end, and whether
  // its members live, while it waits for the others (wait_for_all_done): a member lost
  // meanwhile ends the round, which would otherwise wait for it for ever. Otherwise
  // the watches end with the attempt.
  if (decided || !c_.runner.failures().empty() || c_.stop.signal() != 0) round_->stop();
}

Task<void> Attempt::end_signalled() {
  end_round(signalled_end());
  co_await await_winner();
}

Task<std::optional<RoundEnd>> Attempt::wait_for_all_done() {
  round_->finish_node(c_.changed.notifying([this] { all_done = true; }),
                      c_.changed.notifying([this](const std::string& what) {
                        store_lost = true;
                        lost_ = RoundEnd{RoundEnd::Kind::kFinal, 1, what};
                      }));
  // The job-wide side of the straggler warning (the runner names a node's own): this
  // node's ranks all succeeded long ago and other nodes have not finished. Read on the
  // loop; the round's stop() ends a read in progress.
  std::unique_ptr<Timer> late = c_.clock.make_timer();
  auto after = c_.config.hang.straggler_warning;
  if (after.count() > 0) {
    late->start(after, [this] {
      round_->unfinished(
          [this](const std::vector<int>& unfinished) { say_unfinished(unfinished); });
    });
  }
  // The attempt's watch on the round's end goes on: it sets the attempt's end.
  co_await c_.changed.until(
      [this] { return all_done || decided || lost_ || c_.stop.signal() != 0; });
  late->cancel();
  round_->stop();
  if (all_done) co_return std::nullopt;
  std::optional<RoundEnd> outcome = lost_ ? lost_ : decided;
  if (outcome && outcome->kind != RoundEnd::Kind::kFinal) {
    spdlog::warn("this node finished, but the round ended: {}", outcome->reason);
  }
  co_return outcome;
}

void Attempt::say_unfinished(const std::vector<int>& unfinished) {
  std::string nodes;
  for (int k : unfinished) {
    if (k == info.group_rank) continue;
    nodes += (nodes.empty() ? "" : ", ") + std::to_string(k);
    // Elastic rounds know their members' ids; a static one only their ranks.
    if (k < static_cast<int>(info.members.size()))
      nodes += " (" + info.members[static_cast<size_t>(k)] + ")";
  }
  if (nodes.empty()) return;
  spdlog::warn(
      "node(s) {} still running {} s after every rank of this node exited 0; if a rank "
      "there is stuck at its end (a deadlock tearing the process group down, a thread "
      "never joined), --hang_timeout stops it and shows where",
      nodes, c_.config.hang.straggler_warning.count() / 1000);
}

}  // namespace ddprun::agent
