// A hang: the round ends as after a failure, once every node has captured its
// workers' stacks; then group rank 0 judges every node's reports, and every node takes
// its verdict.
#include <spdlog/spdlog.h>

#include "agent/hang/hang_publish.h"
#include "agent/local_agent_impl.h"

namespace ddprun::agent {
namespace {

// How long the judging node waits for the others' hang reports, and how long they wait
// for its verdict: it may begin later than they do (its capture took longer: a flight
// recorder's dump takes up to 15 s), then judges once every report came, or that time is up.
constexpr std::chrono::milliseconds kHangGatherTimeout{20'000};
constexpr std::chrono::milliseconds kVerdictTimeout = 2 * kHangGatherTimeout;

}  // namespace

// A worker made no progress for too long: the round ends as after a failure, but
// every node first captures its workers' stacks (on_round_end).
void LocalAgent::Impl::on_hang(const Stall& stall) {
  const rendezvous::RendezvousInfo& info = attempt_->info;
  if (attempt_->ending()) return;  // the round is ending already
  std::string what = "hang: " + hang_.describe(stall) + ", node " +
                     std::to_string(info.group_rank) + " (" + host_ + ")";
  spdlog::warn("{}; capturing the workers' stacks", what);
  bool budget_left = info.restart_count < config_.spec.max_restarts;
  RoundEnd mine{budget_left ? RoundEnd::Kind::kRestart : RoundEnd::Kind::kFinal, kHangExitCode,
                what, true};
  end_round(mine, budget_left ? std::optional<NextRound>(NextRound{true, {}}) : std::nullopt);
  stop_workers(mine);
}

// Ends the attempt's workers: after a hang, once their stacks are captured.
void LocalAgent::Impl::stop_workers(const RoundEnd& end) {
  if (!end.hang) return runner_.stop(SIGTERM);
  attempt_->hang_part = "[]";
  hang_.capture(changed_.notifying([this](std::string part) {
    attempt_->hang_part = std::move(part);
    runner_.stop(SIGTERM);
  }));
}

// Every node shares what it captured with group rank 0, which judges the reports and
// shares its verdict (without the stacks): every node names the same culprit and takes
// the same decision on restarting, and only the judging node reads every report (each
// other node's cost is the same at any size). A node that gets no verdict judges its
// own ranks alone.
Task<void> LocalAgent::Impl::report_hang() {
  enter(Phase::kReportingHang);
  ++hangs_;
  Attempt& a = *attempt_;
  co_await changed_.until([this] { return !hang_.capturing() || signalled_ != 0; });
  const bool judging = a.info.group_rank == 0;
  std::string path = log_dir_.run_dir() + "/attempt_" + std::to_string(a.info.restart_count) +
                     "/hang_node" + std::to_string(a.info.group_rank) + ".txt";
  const std::string here = host_ + ":" + path;  // where this node's whole report goes
  // The stacks shared are cut to fit: the judging node's reading is bounded at any size.
  std::string shared =
      part_to_share(a.hang_part, shared_stack_bytes(a.info.group_world_size), here);
  std::optional<HangWatch::Verdict> v;
  if (judging) {
    round_->gather(
        "hang", shared, kHangGatherTimeout,
        changed_.notifying([&a](std::vector<std::string> p) { a.hang_parts = std::move(p); }));
    co_await changed_.until([this, &a] { return a.hang_parts || signalled_ != 0; });
    if (!a.hang_parts) co_return;
    if (!a.hang_parts->empty()) a.hang_parts->front() = a.hang_part;  // its own stacks whole
    v = hang_.judge(*a.hang_parts);
    v->report_at = here;
  } else {
    round_->gather("hang", shared, kHangGatherTimeout, {});
  }
  // The judging node awaits its own verdict too: it is in the store before it goes on.
  round_->gather_from(
      "hang_verdict", v ? HangWatch::shared_verdict(*v) : "", {0}, kVerdictTimeout,
      changed_.notifying([&a](std::vector<std::string> p) { a.hang_verdict = p.at(0); }));
  co_await changed_.until([this, &a] { return a.hang_verdict || signalled_ != 0; });
  if (!a.hang_verdict) co_return;
  if (!v) v = hang_.adopt(*a.hang_verdict, a.hang_part);
  if (!v) {
    v = hang_.judge({a.hang_part});
    v->own_ranks_only = true;
    v->missing = "group rank 0 gave no verdict: this node's ranks were judged alone";
  }
  std::string trigger = a.decided->reason;
  // From here on the job's root cause names the culprit (alike on every node).
  if (!v->diagnosis.headline.empty()) a.decided->reason = "hang: " + v->diagnosis.headline;
  publish_hang(*v, trigger, a.decided->reason, path, a.info.restart_count, observer_);
  log_dir_.keep();
  if (v->no_progress_limit) {
    a.decided =
        RoundEnd{RoundEnd::Kind::kFinal, kNoProgressExitCode,
                 a.decided->reason + "; " + std::to_string(config_.hang.max_no_progress_restarts) +
                     " restart(s) in a row got no rank past the step where it hung before",
                 true};
  }
}

}  // namespace ddprun::agent
