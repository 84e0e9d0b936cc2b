// A hang: the round ends as after a failure, once every node has captured its
// workers' stacks; then every node judges every node's reports alike.
#include <spdlog/spdlog.h>

#include "agent/hang_publish.h"
#include "agent/local_agent_impl.h"

namespace ddprun::agent {
namespace {

// How long the nodes wait for each other's hang reports.
constexpr std::chrono::milliseconds kHangGatherTimeout{20'000};

}  // namespace

// A worker made no progress for too long: the round ends as after a failure, but
// every node first captures its workers' stacks (on_round_end).
void LocalAgent::Impl::on_hang(const rendezvous::RendezvousInfo& info, const Stall& stall) {
  if (over_) return;  // the round is ending already
  std::string what = "hang: " + hang_.describe(stall) + ", node " +
                     std::to_string(info.group_rank) + " (" + host_ + ")";
  spdlog::warn("{}; capturing the workers' stacks", what);
  bool budget_left = info.restart_count < config_.spec.max_restarts;
  RoundEnd mine{budget_left ? RoundEnd::Kind::kRestart : RoundEnd::Kind::kFinal, kHangExitCode,
                what, true};
  end_round(mine);
  stop_workers(*over_);
  if (budget_left) round_->start_next_round(true, members(info));
}

// Ends the attempt's workers: after a hang, once their stacks are captured.
void LocalAgent::Impl::stop_workers(const RoundEnd& end) {
  if (!end.hang) return runner_.stop(SIGTERM);
  hang_part_ = "[]";
  hang_.capture([this](std::string part) {
    hang_part_ = std::move(part);
    runner_.stop(SIGTERM);
  });
}

// Every node shares what it captured; each judges the same reports alike, so every
// node names the same culprit and takes the same decision on restarting.
void LocalAgent::Impl::report_hang(const rendezvous::RendezvousInfo& info) {
  while (hang_.capturing() && signalled_ == 0) io_.run_one();
  std::optional<std::vector<std::string>> parts;
  round_->gather("hang", hang_part_, kHangGatherTimeout,
                 [&parts](std::vector<std::string> p) { parts = std::move(p); });
  while (!parts && signalled_ == 0) io_.run_one();
  if (!parts) return;
  HangWatch::Verdict v = hang_.judge(*parts);
  std::string trigger = over_->reason;
  // From here on the job's root cause names the culprit (alike on every node).
  if (!v.diagnosis.headline.empty()) over_->reason = "hang: " + v.diagnosis.headline;
  std::string path = log_dir_.run_dir() + "/attempt_" + std::to_string(info.restart_count) +
                     "/hang_node" + std::to_string(info.group_rank) + ".txt";
  publish_hang(v, trigger, over_->reason, path, info.restart_count, observer_);
  log_dir_.keep();
  if (v.no_progress_limit) {
    over_ = RoundEnd{RoundEnd::Kind::kFinal, kNoProgressExitCode,
                     over_->reason + "; " + std::to_string(config_.hang.max_no_progress_restarts) +
                         " restart(s) in a row got no rank past the step where it hung before",
                     true};
  }
}

}  // namespace ddprun::agent
