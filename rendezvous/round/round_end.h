#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ddprun::rendezvous {

/// Why a round ended for every node, as stored in its "over" key:
/// "<kind>[+hang][+signalled][+dropped=<node id>,...]|<exit code>|<what happened>". The first
/// writer wins (compare-and-set).
struct RoundEnd {
  enum class Kind {
    kRestart,     // a worker failed and the budget allows another round
    kMembership,  // a node joined or was lost: next round, no restart consumed
    kFinal,       // the job ends: budget spent, too few nodes, or a node was signalled
  };
  RoundEnd() = default;
  RoundEnd(Kind kind, int exitcode, std::string reason, bool hang = false)
      : kind(kind), exitcode(exitcode), reason(std::move(reason)), hang(hang) {}

  Kind kind = Kind::kFinal;
  int exitcode = 1;
  std::string reason;
  /// A rank hung: every node captures its workers' stacks before stopping them.
  bool hang = false;
  /// A node received a stop signal (scancel, Ctrl-C, a shell's kill): the job was
  /// stopped from outside, and every node's run ends "killed", not "failed".
  bool signalled = false;
  /// Nodes the others went on without (no heartbeat): when one of them reads this, it
  /// was dropped from the job and must not keep its workers.
  std::vector<std::string> dropped;
  /// Where the round that the writer began before it told this end is to be found (the
  /// joiner's text, DynamicJoiner::next_round_hint()): a node told it joins without
  /// reading where the next round is first. Empty: none begun. Digits and dots only.
  std::string next_round;

  bool drops(const std::string& node) const;

  /// "restart", "membership" or "final": the kind as stored and as the run records it.
  static const char* kind_name(Kind kind);

  std::string encode() const;
  /// Unknown text reads as a final stop with exit code 1.
  static RoundEnd parse(const std::string& value);
};

}  // namespace ddprun::rendezvous
