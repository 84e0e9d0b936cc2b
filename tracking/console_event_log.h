#pragma once

#include <memory>
#include <ostream>
#include <string>

#include "tracking/run_observer.h"

namespace ddprun::tracking {

/// `--event_log_handler=console` (torchrun 2.x's flag): every agent event as one JSON
/// line, `{"name": ..., "source": "AGENT", "timestamp": ms since the epoch,
/// "metadata": {...}}` (torchrun's shape; the names are ddprun's events: rendezvous,
/// worker_started, worker_exited, hang, restart, membership, job_stopped, spares, links,
/// straggler, run_finished), and everything passed on to `inner` (the run; may be null).
class ConsoleEventLog : public RunObserver {
 public:
  ConsoleEventLog(RunObserver* inner, std::ostream& out, std::string host);

  std::string attach(const std::string& address, bool primary) override;
  void add_worker_env(int node, int rank, int attempt,
                      std::map<std::string, std::string>& env) override;
  void rendezvous_complete(const FormedRound& formed) override;
  bool may_start_workers(int attempt, bool wait) override;
  void worker_started(int node, int rank, int local_rank, int attempt, pid_t pid) override;
  void worker_exited(int node, int rank, int local_rank, int attempt, int exitcode) override;
  void hang(int attempt, const std::string& report_json) override;
  void links_probed(int attempt, const std::string& report_json) override;
  void straggler_named(int attempt, const std::string& data_json) override;
  void straggler_scores(int attempt, const std::string& data_json) override;
  void steps_marked(int node, int attempt, const std::string& data_json) override {
    if (inner_) inner_->steps_marked(node, attempt, data_json);  // the run's alone
  }
  std::optional<RecordCounts> record_counts() const override {
    return inner_ ? inner_->record_counts() : std::nullopt;
  }
  void watchdog_reaped(int node, int rank, int attempt, const std::string& data_json) override;
  void spares_waiting(int attempt, const std::vector<std::string>& spares) override;
  void round_over(int attempt, const std::string& kind, const std::string& reason) override;
  void attempt_ended() override;
  void finished(const std::string& status, int exitcode, const std::string& root_cause) override;
  void complete() override {
    if (inner_) inner_->complete();
  }

 private:
  template <typename Metadata>
  void emit(const std::string& name, const Metadata& metadata);

  RunObserver* inner_;
  std::ostream& out_;
  std::string host_;
};

}  // namespace ddprun::tracking
