// A hang: the round ends as after a failure, once every node has captured its
// workers' stacks; then group rank 0 judges every node's reports, and every node takes
// its verdict.
#include <spdlog/spdlog.h>

#include "agent/attempt.h"
#include "agent/hang/hang_publish.h"

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
void Attempt::on_hang(const Stall& stall) {
  if (ending()) return;  // the round is ending already
  std::string what = "hang: " + c_.hang.describe(stall) + ", node " +
                     std::to_string(info.group_rank) + " (" + c_.host + ")";
  spdlog::warn("{}; capturing the workers' stacks", what);
  bool budget_left = info.restart_count < c_.config.spec.max_restarts;
  RoundEnd mine{budget_left ? RoundEnd::Kind::kRestart : RoundEnd::Kind::kFinal, kHangExitCode,
                what, true};
  end_round(mine, budget_left ? std::optional<NextRound>(NextRound{true, {}}) : std::nullopt);
  stop_workers(mine);
}

// Ends the attempt's workers: after a hang, once their stacks are captured.
void Attempt::stop_workers(const RoundEnd& end) {
  if (!end.hang) return c_.runner.stop(SIGTERM);
  hang_part_ = "[]";
  c_.hang.capture(c_.changed.notifying([this](std::string part) {
    hang_part_ = std::move(part);
    c_.runner.stop(SIGTERM);
  }));
}

// Every node shares what it captured with group rank 0, which judges the reports and
// shares its verdict (without the stacks): every node names the same culprit and takes
// the same decision on restarting, and only the judging node reads every report (each
// other node's cost is the same at any size). A node that gets no verdict judges its
// own ranks alone.
Task<void> Attempt::report_hang() {
  LoopCondition& changed = c_.changed;
  co_await changed.until([this] { return !c_.hang.capturing() || c_.stop.signal() != 0; });
  const bool judging = info.group_rank == 0;
  std::string path = c_.log_dir.run_dir() + "/attempt_" + std::to_string(info.restart_count) +
                     "/hang_node" + std::to_string(info.group_rank) + ".txt";
  const std::string here = c_.host + ":" + path;  // where this node's whole report goes
  // The stacks shared are cut to fit: the judging node's reading is bounded at any size.
  std::string shared = part_to_share(hang_part_, shared_stack_bytes(info.group_world_size), here);
  std::optional<HangWatch::Verdict> v;
  if (judging) {
    round_->gather(
        "hang", shared, kHangGatherTimeout,
        changed.notifying([this](std::vector<std::string> p) { hang_parts_ = std::move(p); }));
    co_await changed.until([this] { return hang_parts_ || c_.stop.signal() != 0; });
    if (!hang_parts_) co_return;
    if (!hang_parts_->empty()) hang_parts_->front() = hang_part_;  // its own stacks whole
    v = c_.hang.judge(*hang_parts_);
    v->report_at = here;
  } else {
    round_->gather("hang", shared, kHangGatherTimeout, {});
  }
  // The judging node awaits its own verdict too: it is in the store before it goes on.
  round_->gather_from(
      "hang_verdict", v ? HangWatch::shared_verdict(*v) : "", {0}, kVerdictTimeout,
      changed.notifying([this](std::vector<std::string> p) { hang_verdict_ = p.at(0); }));
  co_await changed.until([this] { return hang_verdict_ || c_.stop.signal() != 0; });
  if (!hang_verdict_) co_return;
  if (!v) v = c_.hang.adopt(*hang_verdict_, hang_part_);
  if (!v) {
    v = c_.hang.judge({hang_part_});
    v->own_ranks_only = true;
    v->missing = "group rank 0 gave no verdict: this node's ranks were judged alone";
  }
  std::string trigger = decided->reason;
  // From here on the job's root cause names the culprit (alike on every node).
  if (!v->diagnosis.headline.empty()) decided->reason = "hang: " + v->diagnosis.headline;
  publish_hang(*v, trigger, decided->reason, path, info.restart_count, c_.observer);
  c_.log_dir.keep();
  if (v->no_progress_limit) {
    decided =
        RoundEnd{RoundEnd::Kind::kFinal, kNoProgressExitCode,
                 decided->reason + "; " + std::to_string(c_.config.hang.max_no_progress_restarts) +
                     " restart(s) in a row got no rank past the step where it hung before",
                 true};
  }
}

}  // namespace ddprun::agent
