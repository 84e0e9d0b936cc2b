#pragma once

#include <memory>
#include <string>

#include "tracking/node_run.h"
#include "tracking/record_forwarder.h"

namespace ddprun::tracking {

/// A node's part of a multi-node job's run, on every agent but the primary: the node's
/// records (its own agent.jsonl and its workers' streams) are kept in
/// `<run dir>/parts/<host>.<pid>/` and sent on to the primary (RecordForwarder) as they
/// are written. The part is deleted once the primary holds all of it, else kept for
/// `ddprun runs merge`, which the job's end says.
class ForwardingRun : public NodeRun {
 public:
  /// `published`: "<address> <port>\n<run name>", what the primary's serve_agents()
  /// returned and the agents shared ("" when it did
  /// not: it runs without tracking, and the node's records stay in its part of a run
  /// named after the rendezvous id). Throws TrackingError naming the directory when
  /// the part cannot be made.
  ForwardingRun(const RunOptions& options, std::string agent_id, const std::string& published);
  ~ForwardingRun() override;

  void record_job_event(const Event&) override {}  // the primary records those
  /// The last records sent, then the primary told this agent is done; the part goes
  /// when the primary holds all of it. Returns once that is settled.
  void finished(const std::string& status, int exitcode, const std::string& root_cause) override;
  /// A pass waiting on a silent primary gives up sooner from now on.
  void attempt_ended() override;

 private:
  IngestStats pass_streams(bool final) override { return forwarder_->pass(final); }

  std::unique_ptr<RecordForwarder> forwarder_;
};

}  // namespace ddprun::tracking
