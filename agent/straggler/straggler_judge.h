#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/hang/hang_monitor.h"

namespace ddprun::agent {

/// One rank's steps over a window: how many, their time, and of it the rank's own work
/// (not spent waiting for the other ranks).
struct RankSteps {
  int rank = 0;
  uint64_t steps = 0;
  double step_seconds = 0;
  double own_seconds = 0;

  double own_per_step() const { return steps ? own_seconds / static_cast<double>(steps) : 0; }
};

/// Turns this node's ranks' step counters (cumulative, on their progress pages) into
/// what each did since the last window. Pure logic.
class StepWindows {
 public:
  /// A new attempt of `workers` ranks from `first_rank` on: counters start at zero.
  void start_attempt(int workers, int first_rank);
  /// What `local_rank` did since the last take, from its counters now.
  RankSteps take(int local_rank, const StepCounters& now);

 private:
  int first_rank_ = 0;
  std::vector<StepCounters> last_;
};

/// A node's window as the nodes share it: its host, then one line per rank with steps,
/// "rank steps step_ns own_ns". decode_part() gives nullopt for anything else.
std::string encode_part(const std::string& host, const std::vector<RankSteps>& ranks);
struct NodePart {
  std::string host;
  std::vector<RankSteps> ranks;
};
std::optional<NodePart> decode_part(const std::string& text);

/// How a rank's own work per step compares with the job's median: own / median, the
/// median taken as at least kFloor so that a job whose ranks barely work between their
/// waits (noise of microseconds) names nobody.
double straggler_score(double own_per_step, double median);

/// Names the ranks and nodes that slow the job, one window at a time, from every
/// node's part (group rank 0 judges). In synchronous training every rank's step lasts
/// as long as the slowest's, so steps are compared by the rank's own work in them: a
/// rank whose own work per step is over `threshold` x the job's median in `windows`
/// windows in a row is a straggler until a window finds it under again. A node is
/// scored by the median of its ranks' scores (of an even count, the lower middle: a node
/// is slow when most of its ranks are). Pure logic: times come from the caller.
class StragglerJudge {
 public:
  struct Options {
    double threshold = 1.3;
    int windows = 2;
    /// A straggler is named again after this long while it stays one.
    std::chrono::milliseconds repeat{std::chrono::minutes(5)};
  };
  static constexpr double kFloor = 0.001;  // seconds of own work per step

  struct Score {
    int rank = 0;  // the rank, or the node's group rank for a node
    int node = 0;  // the node's group rank
    std::string host;
    double score = 0;
    double own_per_step = 0;  // seconds (a node's: its ranks' median, as its score)
    uint64_t steps = 0;
    bool straggler = false;  // over the threshold `windows` windows in a row
    bool say = false;        // newly a straggler, or `repeat` since it was last named
  };
  struct Verdict {
    double median_own = 0;      // seconds of own work per step; 0: nothing to judge
    std::vector<Score> ranks;   // every rank with steps in the window, by rank
    std::vector<Score> nodes;   // every node with such ranks, by group rank
    std::vector<int> recovered; // ranks named before that are under the threshold now
  };

  explicit StragglerJudge(Options options) : options_(options) {}
  /// Judges one window from the nodes' parts, by group rank (an empty or unreadable
  /// part: that node is left out).
  Verdict judge(const std::vector<std::string>& parts, std::chrono::milliseconds now);
  /// A new round: its ranks may be others.
  void reset() { seen_.clear(); }

 private:
  struct Seen {
    int over = 0;  // windows in a row over the threshold
    std::optional<std::chrono::milliseconds> said;
  };
  void follow(Score& s, const std::string& key, std::chrono::milliseconds now);

  Options options_;
  std::map<std::string, Seen> seen_;  // by "r<rank>" or "n<node>", this round's
};

}  // namespace ddprun::agent
