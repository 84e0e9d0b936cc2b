// Nodes that leave an elastic job's round: a member whose heartbeat stopped, and the
// worst straggler with --straggler_action=exclude. The others go on in a new round,
// with the spares waiting, if they are still at least MIN (torchrun leaves them
// hanging).
#include <spdlog/spdlog.h>

#include "agent/attempt.h"
#include "common/node_names.h"

namespace ddprun::agent {

void Attempt::on_dead(const std::vector<std::string>& dead) {
  if (ending()) return;
  std::vector<std::string> known = info.members;
  known.push_back(self);
  std::string names = node_names(dead, known);
  count_without(dead, [this, dead, names](const NodesWithout& w) {
    end_round_without(dead, "lost node(s) " + names, w);
  });
}

// Gives `then` how many nodes the job would have without `out`: the members left, and
// the spares waiting where those are fewer than MIN (one quick read then, awaited on
// the loop; `then` is not called where the round ended meanwhile).
void Attempt::count_without(const std::vector<std::string>& out,
                            const std::function<void(const NodesWithout&)>& then) {
  NodesWithout w{{out.begin(), out.end()}, 0, 0};
  w.left = info.group_world_size - static_cast<int>(w.out.size());
  if (w.left >= c_.config.min_nodes) return then(w);
  round_->spares(c_.changed.notifying(
      [this, w, then](const std::optional<std::vector<std::string>>& waiting) mutable {
        if (ending()) return;
        if (waiting) w.spares = static_cast<int>(waiting->size());
        then(w);
      }));
}

// The round ends without the nodes `out` (`lost` says why), who would leave it as `w`:
// the others go on in a new round if they are still at least MIN with the spares
// waiting; `out` learn that they were dropped.
void Attempt::end_round_without(const std::vector<std::string>& out, std::string lost,
                                const NodesWithout& w) {
  const auto& [lost_members, left, waiting] = w;
  int min_nodes = c_.config.min_nodes;
  bool enough = left + waiting >= min_nodes;
  if (waiting > 0) lost += "; " + std::to_string(waiting) + " spare(s) waiting";
  RoundEnd mine = enough
                      ? RoundEnd{RoundEnd::Kind::kMembership, 0, lost}
                      : RoundEnd{RoundEnd::Kind::kFinal, 1,
                                 lost + ": " + std::to_string(left) + " node(s) left, at least " +
                                     std::to_string(min_nodes) + " needed"};
  mine.dropped = out;  // so that they learn it, should they come back
  end_round(mine, enough ? std::optional<NextRound>(NextRound{false, lost_members}) : std::nullopt);
  c_.runner.stop(SIGTERM);
}

// --straggler_action=exclude, group rank 0: the worst straggler's node leaves the job
// and the others go on in a new round, with a spare if one waits, where they are still
// at least MIN; otherwise it stays (the watch says so once a round).
void Attempt::exclude_straggler(const StragglerJudge::Score& worst, const std::string& member) {
  if (ending()) return;
  count_without({member}, [this, member, worst](const NodesWithout& w) {
    int min_nodes = c_.config.min_nodes;
    if (w.left + w.spares < min_nodes) {
      stragglers->refuse(
          worst.node, worst.host,
          fmt::format("without it the job would have {} node(s) and {} spare(s), and --nnodes "
                      "asks for at least {}",
                      w.left, w.spares, min_nodes));
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

}  // namespace ddprun::agent
