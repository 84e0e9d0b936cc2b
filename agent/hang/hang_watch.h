#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/agent_config.h"
#include "agent/hang/hang_monitor.h"
#include "agent/hang/hang_report.h"
#include "agent/hang/process_inspector.h"
#include "common/clock.h"

namespace ddprun::agent {

class WorkerGroupRunner;

/// Hang detection for one node, on the agent's loop: looks at the running workers'
/// progress on a timer (HangMonitor decides), captures their stacks and state when
/// the job hangs, and judges the whole job's reports (the culprit; restarts that got
/// nowhere). Single-threaded.
class HangWatch {
 public:
  /// Judgement of one hang from every node's reports.
  struct Verdict {
    std::vector<RankReport> ranks;  // every rank reported, by rank
    HangDiagnosis diagnosis;
    std::string missing;              // "node 1 did not report", ...
    std::optional<int64_t> top_step;  // the highest step any rank had reached
    bool own_ranks_only = false;      // ranks are this node's: the judging node has the others
    std::string report_at;            // where every rank's stacks are ("<host>:<path>"), if known
    bool no_progress_limit = false;  // this hang ends the job (kNoProgressExitCode)
  };

  /// `inspector` may be null: no CPU, state or stacks then.
  HangWatch(const AgentConfig& config, Clock& clock, WorkerGroupRunner& runner,
            ProcessInspector* inspector, std::string host);
  ~HangWatch();

  /// Shares this node's longest interval between progress with the other nodes and
  /// hands the job's to `adopt` once known, on the loop (auto mode: the timeout is
  /// learned job-wide).
  using Adopt = std::function<void(std::chrono::milliseconds)>;
  using ShareLongest = std::function<void(std::chrono::milliseconds, Adopt adopt)>;
  /// How often the longest interval is shared, in auto mode.
  static constexpr std::chrono::milliseconds kShareInterval{2000};

  /// Watches the attempt's workers from now; `on_stall` once when one hangs. `share`
  /// may be null (nobody to learn from).
  void start(std::function<void(const Stall&)> on_stall, ShareLongest share = nullptr);
  void stop();
  /// "no progress for 5.2 s (timeout 5.0 s) on rank 1 (local_rank 1)".
  std::string describe(const Stall& stall) const;

  /// Captures every worker's state and stacks; `done` gets this node's reports as
  /// JSON text, to share with the other nodes.
  void capture(std::function<void(std::string)> done);
  bool capturing() const { return capturing_; }
  /// The hangs this node captured in the job (one capture each).
  uint64_t hangs() const { return hangs_; }

  /// Judges every node's shared reports (by group rank; empty: none came): the judging
  /// node's part of the exchange.
  Verdict judge(const std::vector<std::string>& parts);
  /// What the judging node shares of `v` for the others to adopt: everything but the
  /// ranks' stacks, and `report_at`, where those are.
  static std::string shared_verdict(const Verdict& v);
  /// Takes the verdict the judging node shared (shared_verdict()) as this node's, with
  /// this node's own ranks from `mine` (what it shared); nullopt, and nothing counted,
  /// where `shared` is not one.
  std::optional<Verdict> adopt(const std::string& shared, const std::string& mine);

 private:
  struct Look {
    ProcessLook process;
    double cpu_percent = -1;
  };

  void tick();
  void share_longest(std::chrono::milliseconds now);
  // Counts this hang against the restarts without progress, from the highest step any
  // rank had reached; true where that ends the job.
  bool count_progress(std::optional<int64_t> top);

  const AgentConfig& config_;
  Clock& clock_;
  WorkerGroupRunner& runner_;
  ProcessInspector* inspector_;
  std::string host_;
  HangMonitor monitor_;
  std::unique_ptr<Timer> timer_;
  std::function<void(const Stall&)> on_stall_;
  ShareLongest share_;
  int attempt_ = 0;  // counts start(): what comes back from an earlier attempt is dropped
  std::chrono::milliseconds last_share_{0};
  std::vector<Look> looks_;
  std::chrono::milliseconds last_look_{0};
  bool capturing_ = false;
  uint64_t hangs_ = 0;
  // Across attempts: the attempt (restart count) of the last hang, the highest step any
  // rank had reached then, and the hangs in a row since that got no rank past it.
  std::optional<int> last_hang_attempt_;
  std::optional<int64_t> hang_step_;
  int no_progress_ = 0;
};

}  // namespace ddprun::agent
