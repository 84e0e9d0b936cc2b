#pragma once

#include <string>

namespace ddprun::rendezvous {

/// Why a round ended for every node, as stored in its "over" key:
/// "<kind>[+hang]|<exit code>|<what happened>". The first writer wins (compare-and-set).
struct RoundEnd {
  enum class Kind {
    kRestart,     // a worker failed and the budget allows another round
    kMembership,  // a node joined or was lost: next round, no restart consumed
    kFinal,       // the job ends: budget spent, too few nodes, or a node was signalled
  };
  Kind kind = Kind::kFinal;
  int exitcode = 1;
  std::string reason;
  /// A rank hung: every node captures its workers' stacks before stopping them.
  bool hang = false;

  /// "restart", "membership" or "final": the kind as stored and as the run records it.
  static const char* kind_name(Kind kind);

  std::string encode() const;
  /// Unknown text reads as a final stop with exit code 1.
  static RoundEnd parse(const std::string& value);
};

}  // namespace ddprun::rendezvous
