// How a round ends for this node: a worker's failure (or its death by a stop signal,
// told after a moment), ddprun's own stop signals, a lost store or lost nodes, and the
// end of the job once every node is done.
#include <algorithm>

#include <spdlog/spdlog.h>

#include "agent/local_agent_impl.h"
#include "common/logging.h"
#include "common/node_names.h"

namespace ddprun::agent {
namespace {

// How long a worker's death by a stop signal waits for ddprun's own copy before the
// other nodes are told of it as a failure.
constexpr std::chrono::milliseconds kStopSignalGrace{200};
// How long each wait of a store request may last once a stop signal came (telling the
// others why the job ends, closing the rendezvous): a frozen store host does not hold
// up a Ctrl-C.
constexpr std::chrono::seconds kLastWordsWait{3};

}  // namespace

// What this node tells the others when a stop signal ends the job.
RoundEnd LocalAgent::Impl::signalled_end() const {
  RoundEnd end{RoundEnd::Kind::kFinal, 128 + signalled_,
               "node " + std::to_string(attempt_->info.group_rank) + " (" + host_ + ") received " +
                   signal_name(signalled_)};
  end.signalled = true;
  return end;
}

// Workers that died of a stop signal mostly got it from whoever stops the whole job
// (scancel signals every process of the step, a shell its process group): ddprun's
// own copy is given a moment to arrive, so that the job ends "killed" by the signal
// rather than "failed" with a rank as its root cause.
Task<void> LocalAgent::Impl::await_stop_signal_after_stopped_workers() {
  const auto& failures = runner_.failures();
  if (signalled_ == 0 && !failures.empty() && is_stop_signal_death(failures.front().exitcode)) {
    co_await signals_.await_stop(kStopSignalGrace);
  }
}

bool LocalAgent::Impl::is_stop_signal_death(int exitcode) const {
  const auto& stops = config_.stop_signals;
  return std::find(stops.begin(), stops.end(), -exitcode) != stops.end();
}

// The same race seen from the other nodes: a worker that died of a stop signal is
// told to them as a failure only when ddprun's own copy has not come within
// kStopSignalGrace (or by the attempt's end), so that a job stopped everywhere at
// once (scancel) ends "killed" on every node, not "failed" on those that heard first.
void LocalAgent::Impl::on_worker_failure(const FailureRecord& f) {
  if (signalled_ == 0 && is_stop_signal_death(f.exitcode)) {
    if (!attempt_->pending_failure) {
      attempt_->pending_failure = f;
      stop_grace_->start(kStopSignalGrace, changed_.notifying([this] { tell_pending_failure(); }));
    }
    return;
  }
  tell_failure(f);
}

void LocalAgent::Impl::tell_pending_failure() {
  stop_grace_->cancel();
  if (!attempt_->pending_failure) return;
  FailureRecord f = *attempt_->pending_failure;
  attempt_->pending_failure.reset();
  if (signalled_ == 0 && !attempt_->ending()) tell_failure(f);
}

void LocalAgent::Impl::tell_failure(const FailureRecord& f) {
  const rendezvous::RendezvousInfo& info = attempt_->info;
  std::string what = "rank " + std::to_string(f.global_rank) + " (local_rank " +
                     std::to_string(f.local_rank) + ") on node " + std::to_string(info.group_rank) +
                     " (" + host_ + ") exited with " + std::to_string(f.exitcode);
  bool budget_left = info.restart_count < config_.spec.max_restarts;
  if (budget_left && crash_loop()) {
    end_round({RoundEnd::Kind::kFinal, kNoProgressExitCode,
               what + "; " + std::to_string(config_.hang.max_no_progress_restarts) +
                   " restart(s) in a row " + restarts_.why() +
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
bool LocalAgent::Impl::crash_loop() {
  if (attempt_->progress_judged) return false;
  attempt_->progress_judged = true;
  std::optional<int64_t> furthest;
  uint64_t timed = 0;
  for (int i = 0; i < config_.spec.local_world_size; ++i) {
    ProgressSample s = runner_.progress(i);
    if (s.step && (!furthest || *s.step > *furthest)) furthest = s.step;
    timed += s.timed.steps;
  }
  return restarts_.failed(attempt_->info.restart_count, furthest, timed) >=
         config_.hang.max_no_progress_restarts;
}

// Tells the others why the round ends: the first writer wins, and the winner, once
// the store says which (or the end watch sees it first), is the attempt's end. The
// caller stops the workers meanwhile, as its own end asks. The `next` round is begun
// first, and the end says where it is: the others, told, announce themselves at once
// (told first, they waited for it to begin and read its head twice: three requests
// more for every node).
void LocalAgent::Impl::end_round(const RoundEnd& mine, std::optional<NextRound> next) {
  if (attempt_->ending()) return;
  attempt_->proposed = mine;
  goodput_.round_ends();
  if (next) round_->start_next_round(next->failure, next->lost);
  round_->end(mine,
              changed_.notifying([this](RoundEnd winner) { adopt_winner(std::move(winner)); }));
}

void LocalAgent::Impl::adopt_winner(RoundEnd winner) {
  if (!attempt_->proposed) return;  // adopted already
  attempt_->proposed.reset();
  attempt_->decided = unless_dropped(std::move(winner));
}

// Before the attempt's end is acted on: the store's answer to this node's end, and to
// the requests that followed it (the next round's start, a failure counted). Once a
// stop signal came, they are awaited kLastWordsWait at most (a frozen store does not
// hold up a Ctrl-C); this node's own end stands then.
Task<void> LocalAgent::Impl::await_winner() {
  auto settled = std::make_shared<bool>(false);  // outlives this frame, for a late answer
  round_->after_requests(changed_.notifying([settled] { *settled = true; }));
  // The predicate holds a plain pointer: GCC 12 (docs/contributing.md) destroys a temporary made in
  // a co_await expression twice, which a copy of the shared_ptr does not survive.
  const bool* answered = settled.get();
  co_await changed_.until(
      [this, answered] { return (!attempt_->proposed && *answered) || stop_deadline_passed_; });
  if (attempt_->proposed) {
    spdlog::warn("could not tell the other nodes: no answer while stopping");
    adopt_winner(*attempt_->proposed);
  }
}

// The end as it applies to this node: when the others went on without it (it was
// frozen, or cut off from the rendezvous store), its workers belong to a world that no
// longer exists; they stop now, before they reach a collective or write a
// checkpoint, and the node leaves the job.
RoundEnd LocalAgent::Impl::unless_dropped(RoundEnd end) {
  if (!end.drops(attempt_->self)) return end;
  attempt_->dropped = true;
  // Left out on purpose (a straggler), or for silence.
  bool chosen = end.reason.rfind("lost node(s)", 0) != 0;
  RoundEnd out{RoundEnd::Kind::kFinal, kDroppedExitCode,
               chosen ? "this node was dropped from the job (" + end.reason +
                            "); its workers are stopped"
                      : "this node was dropped from the job: the other nodes heard no heartbeat "
                        "from it (frozen, or cut off from the rendezvous store) and went on "
                        "without it; its workers are stopped"};
  spdlog::error("{}", out.reason);
  return out;
}

void LocalAgent::Impl::on_round_end(RoundEnd end) {
  if (attempt_->decided) return;  // adopted already
  // The store's winner, seen before its answer to this node's end: the workers are
  // being stopped already.
  if (attempt_->proposed) return adopt_winner(std::move(end));
  end = unless_dropped(std::move(end));
  if (!signalled_ && !runner_.idle()) spdlog::warn("stopping: {}", end.reason);
  attempt_->decided = std::move(end);
  goodput_.round_ends();
  stop_workers(*attempt_->decided);
}

void LocalAgent::Impl::on_store_lost(const std::string& what) {
  if (runner_.idle() || attempt_->ending()) return;
  spdlog::error("{}; stopping the workers", what);
  attempt_->store_lost = true;
  attempt_->decided = RoundEnd{RoundEnd::Kind::kFinal, 1, what};
  goodput_.round_ends();
  runner_.stop(SIGTERM);
}

// Elastic jobs: a member whose heartbeat stopped is dropped and the survivors go
// on, with the spares waiting, if they are still at least MIN (torchrun leaves them
// hanging).
void LocalAgent::Impl::on_dead(const std::vector<std::string>& dead) {
  if (attempt_->ending()) return;
  std::vector<std::string> known = attempt_->info.members;
  known.push_back(attempt_->self);
  std::string names = node_names(dead, known);
  count_without(dead, [this, dead, names](const NodesWithout& w) {
    end_round_without(dead, "lost node(s) " + names, w);
  });
}

// Gives `then` how many nodes the job would have without `out`: the members left, and
// the spares waiting where those are fewer than MIN (one quick read then, awaited on
// the loop; `then` is not called where the round ended meanwhile).
void LocalAgent::Impl::count_without(const std::vector<std::string>& out,
                                     const std::function<void(const NodesWithout&)>& then) {
  NodesWithout w{{out.begin(), out.end()}, 0, 0};
  w.left = attempt_->info.group_world_size - static_cast<int>(w.out.size());
  if (w.left >= config_.min_nodes) return then(w);
  round_->spares(changed_.notifying(
      [this, w, then](const std::optional<std::vector<std::string>>& waiting) mutable {
        if (attempt_->ending()) return;
        if (waiting) w.spares = static_cast<int>(waiting->size());
        then(w);
      }));
}

// The round ends without the nodes `out` (`lost` says why), who would leave it as `w`:
// the others go on in a new round if they are still at least MIN with the spares
// waiting; `out` learn that they were dropped.
void LocalAgent::Impl::end_round_without(const std::vector<std::string>& out, std::string lost,
                                         const NodesWithout& w) {
  const auto& [lost_members, left, spares] = w;
  bool enough = left + spares >= config_.min_nodes;
  if (spares > 0) lost += "; " + std::to_string(spares) + " spare(s) waiting";
  RoundEnd mine = enough ? RoundEnd{RoundEnd::Kind::kMembership, 0, lost}
                         : RoundEnd{RoundEnd::Kind::kFinal, 1,
                                    lost + ": " + std::to_string(left) +
                                        " node(s) left, at least " +
                                        std::to_string(config_.min_nodes) + " needed"};
  mine.dropped = out;  // so that they learn it, should they come back
  end_round(mine, enough ? std::optional<NextRound>(NextRound{false, lost_members}) : std::nullopt);
  runner_.stop(SIGTERM);
}

// --straggler_action=exclude, group rank 0: the worst straggler's node leaves the job
// and the others go on in a new round, with a spare if one waits, where they are still
// at least MIN; otherwise it stays (the watch says so once a round).
void LocalAgent::Impl::exclude_straggler(const StragglerJudge::Score& worst,
                                         const std::string& member) {
  if (attempt_->ending()) return;
  count_without({member}, [this, member, worst](const NodesWithout& w) {
    if (w.left + w.spares < config_.min_nodes) {
      attempt_->stragglers->refuse(
          worst.node, worst.host,
          fmt::format("without it the job would have {} node(s) and {} spare(s), and --nnodes "
                      "asks for at least {}",
                      w.left, w.spares, config_.min_nodes));
      return;
    }
    spdlog::warn("straggler: node {} ({}) leaves the job (--straggler_action=exclude)", worst.node,
                 worst.host);
    end_round_without(
        {member},
        fmt::format("straggler node {} ({}) left out: its ranks' own work per step was "
                    "{:.1f}x the job's median",
                    worst.node, worst.host, worst.score),
        w);
  });
}

void LocalAgent::Impl::on_stop_signal(int sig) {
  if (signalled_ != 0) {
    spdlog::warn("received {} again; killing the workers now", signal_name(sig));
    runner_.stop(SIGKILL);
    return;
  }
  signalled_ = sig;
  if (attempt_ && attempt_->ending()) attempt_->ending_when_signalled = true;
  stop_deadline_->start(kLastWordsWait, changed_.notifying([this] {
    stop_deadline_passed_ = true;
    after_stop_cancel_.cancel();
  }));
  // One line says what the signal ends: the workers, or the wait for the other nodes.
  int workers = runner_.running_workers();
  if (phase_ == Phase::kAwaitingOthers) {
    spdlog::warn("received {} while waiting for the other nodes to finish", signal_name(sig));
  } else if (workers > 0 || !cancel_wait_) {
    spdlog::warn("received {}; stopping {} worker(s)", signal_name(sig), workers);
  } else {
    spdlog::warn("received {} while waiting for the other nodes", signal_name(sig));
  }
  runner_.stop(sig);
  if (cancel_wait_) cancel_wait_();
}

// Marks this node done and waits until every node is, or the round ends anyway.
Task<std::optional<RoundEnd>> LocalAgent::Impl::wait_for_all_done() {
  Attempt& a = *attempt_;
  round_->finish_node(changed_.notifying([&a] { a.all_done = true; }),
                      changed_.notifying([&a](const std::string& what) {
                        a.store_lost = true;
                        a.lost = RoundEnd{RoundEnd::Kind::kFinal, 1, what};
                      }));
  std::unique_ptr<Timer> late = clock_.make_timer();
  auto after = config_.hang.straggler_warning;
  if (after.count() > 0) late->start(after, [this] { name_unfinished(); });
  // The attempt's watch on the round's end goes on: it sets the attempt's end.
  co_await changed_.until(
      [this, &a] { return a.all_done || a.decided || a.lost || signalled_ != 0; });
  late->cancel();
  round_->stop();
  if (a.all_done) co_return std::nullopt;
  std::optional<RoundEnd> outcome = a.lost ? a.lost : a.decided;
  if (outcome && outcome->kind != RoundEnd::Kind::kFinal) {
    spdlog::warn("this node finished, but the round ended: {}", outcome->reason);
  }
  co_return outcome;
}

// The job-wide side of the straggler warning (the runner names a node's own): this
// node's ranks all succeeded long ago and other nodes have not finished. Read on the
// loop; the round's stop() ends a read in progress.
void LocalAgent::Impl::name_unfinished() {
  round_->unfinished([this](const std::vector<int>& unfinished) { say_unfinished(unfinished); });
}

void LocalAgent::Impl::say_unfinished(const std::vector<int>& unfinished) {
  const rendezvous::RendezvousInfo& info = attempt_->info;
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
      nodes, config_.hang.straggler_warning.count() / 1000);
}

}  // namespace ddprun::agent
