#include "agent/job_end.h"

#include <ctime>
#include <iostream>
#include <utility>

#include "agent/hang/hang_options.h"
#include "agent/orphan_guard.h"
#include "agent/worker.h"
#include "common/logging.h"
#include "rendezvous/rendezvous_errors.h"

namespace ddprun::agent {
namespace {

// With the failure summary: the nodes kept out of the last round (--node_failure_limit),
// so that a job that ran out of nodes says which are out and why.
void say_quarantined(const rendezvous::RendezvousInfo& info) {
  for (const auto& q : info.quarantined) {
    auto until = static_cast<std::time_t>(q.until_ms / 1000);
    std::tm tm{};
    localtime_r(&until, &tm);
    char at[16];
    std::strftime(at, sizeof(at), "%H:%M:%S", &tm);
    std::cerr << "ddprun: quarantined: " << q.node << " until " << at << " (" << q.reason << ")\n";
  }
}

}  // namespace

JobEnd::JobEnd(const AgentConfig& config, const std::string& host, LogDir& log_dir,
               OrphanGuard* guard, tracking::RunObserver* observer, std::function<void()> on_end)
    : config_(config),
      host_(host),
      log_dir_(log_dir),
      guard_(guard),
      observer_(observer),
      on_end_(std::move(on_end)) {}

int JobEnd::signalled(int sig) {
  return finish(128 + sig, "killed", "received " + signal_name(sig));
}

int JobEnd::spare(const rendezvous::SpareNotNeeded& ended) {
  std::cerr << "ddprun: " << ended.what() << "\n";
  return finish(ended.job_failed() ? 1 : 0, ended.job_failed() ? "failed" : "finished", "",
                !ended.job_failed());
}

int JobEnd::failure(const std::vector<FailureRecord>& failures, const rendezvous::RoundEnd& over,
                    const rendezvous::RendezvousInfo& info, bool dropped) {
  say_quarantined(info);
  if (over.signalled && !dropped) {  // another node was told to stop the job
    std::cerr << "ddprun: the job was stopped: " << over.reason << "\n";
    return finish(over.exitcode, "killed", over.reason);
  }
  if (dropped || failures.empty()) {
    std::cerr << "ddprun: " << (dropped ? "" : "the job failed: ") << over.reason << "\n";
    return finish(over.exitcode, "failed", over.reason);
  }
  std::cerr << format_failure_summary(config_.spec.entrypoint_name, host_, failures) << std::flush;
  if (over.exitcode == kNoProgressExitCode) {  // a crash loop, stopped: why, and its own code
    std::cerr << "ddprun: the job failed: " << over.reason << "\n";
    return finish(kNoProgressExitCode, "failed", over.reason);
  }
  const FailureRecord& root = failures.front();
  return finish(shell_exit_code(root.exitcode), "failed",
                "rank " + std::to_string(root.global_rank) + " (local_rank " +
                    std::to_string(root.local_rank) + ") on " + host_ + " exited with " +
                    std::to_string(root.exitcode));
}

int JobEnd::finish(int code, const std::string& status, const std::string& root_cause,
                   bool succeeded) {
  on_end_();
  // The observer completes the run on its own thread meanwhile (complete() or its
  // destructor waits for that, after the agent's end).
  if (observer_) observer_->finished(status, code, root_cause);
  if (succeeded) {
    log_dir_.remove_if_temporary();
  } else {
    log_dir_.remove_if_temporary_and_unread();
  }
  if (guard_) guard_->release();
  return code;
}

}  // namespace ddprun::agent
