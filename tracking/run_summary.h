#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tracking/goodput.h"
#include "tracking/membership_story.h"
#include "tracking/run_store.h"

namespace ddprun::tracking {

/// What one line about a run says: `runs list`, the dashboard's runs page and
/// `/api/runs` show the same.
struct RunSummary {
  std::string id;           // the run's directory name
  std::string name;         // --run_name, or the id
  std::string status;       // running, finished, failed, killed, crashed (see effective_status)
  double created = 0;       // wall clock, seconds since the epoch
  double finished = 0;      // 0 while running
  int nodes = 0;            // of the last rendezvous (0: none yet)
  int ranks = 0;
  std::vector<std::string> spares;  // hot spares waiting, as the primary last saw them
  using Quarantined = KeptOut;
  std::vector<Quarantined> quarantined;  // every quarantine of the job, oldest first
  std::vector<std::string> agents;       // every agent id its rounds named (Membership)
  /// The job's membership, one line per change (Membership::story).
  std::vector<std::string> membership;
  struct Straggler {
    std::string who;  // "rank 3 (node 1, host)" or "node 1 (host)"
    double score = 0;  // when last named: own work per step over the job's median
    double own_s = 0, median_s = 0;
    double first = 0, last = 0;  // wall clock of its first and last naming
    int times = 0;
  };
  std::vector<Straggler> stragglers;  // ranks and nodes straggler detection named
  /// Restarts after a failure: TORCHELASTIC_RESTART_COUNT of the last round, as the
  /// console's "attempt N of M" counts them, never more than --max_restarts.
  int restarts = 0;
  /// Rounds re-formed because nodes came, went or were lost: apart from restarts.
  int membership_changes = 0;
  /// Where the job's seconds went (none: no round recorded; see Goodput::steps_seen).
  std::optional<Goodput> goodput;
  std::optional<int> exit_code;
  std::string root_cause;
  std::string error;        // set when the run could not be read; the rest is empty
  bool needs_repair = false;  // a killed launcher left records run.db lacks (needs_repair)
};

/// A run's count of its rounds' ends, each by its kind (RoundEnd::kind_name: "restart",
/// "membership"; a final end counts neither): one count of restarts everywhere, the
/// membership changes apart.
struct RoundEndCounts {
  int restarts = 0;
  int membership_changes = 0;
};
void count_round_end(const std::string& kind, RoundEndCounts& counts);

/// One run's summary. Throws TrackingError when its database cannot be read.
RunSummary summarize_run(RunStore& store, const std::string& id);

/// The attempts of a run, from its events: each "rendezvous" begins one; its workers'
/// exits, its hang and its round's end say how it ended; the nodes' "steps" events say
/// when its steps and checkpoints were.
std::vector<AttemptSpan> attempt_spans(RunStore& store);

/// A run's accounting from its events, over [its creation, `end`]; nullopt where no
/// attempt is recorded.
std::optional<Goodput> run_goodput(RunStore& store, double created, double end, bool ended);

/// The goodput accounting of the complete run at `run_dir` (a job's end reads it for
/// its failure summary); nullopt where it cannot be read or no step was timed.
std::optional<Goodput> ended_run_goodput(const std::string& run_dir);

/// Every run in `tracking_dir`, newest first; a run that cannot be read is listed
/// with `error` set. Throws TrackingError when the directory cannot be read.
std::vector<RunSummary> list_runs(const std::string& tracking_dir);

/// The id of the run `ref` names in `tracking_dir`: its id, its name (--run_name),
/// a prefix of one id, or "latest" (the newest run). Throws TrackingError saying that
/// no run matches, or naming every run that does when `ref` is ambiguous.
std::string find_run(const std::string& tracking_dir, const std::string& ref);

/// Seconds from created to finished (or to now while running).
double run_duration(const RunSummary& run);

}  // namespace ddprun::tracking
