// A spare's way into a running job. Apart from join() and from the steps it awaits
// (dynamic_joiner_steps.cc): GCC 12 takes a coroutine frame's delete for a mismatched
// one where a caller in the same file inlines it (docs/contributing.md).
#include <set>
#include <string>

#include "rendezvous/join/dynamic_joiner.h"
#include "rendezvous/round/round_end.h"

namespace ddprun::rendezvous {

// This node arrived while round `round` runs and wrote itself in: the round ends for
// everyone so that the next one has it (begun first, so that the members, told where,
// join it without reading it).
Task<void> DynamicJoiner::end_round_to_join(int round, std::string node, CancelSignal& cancel) {
  std::set<std::string> lost;
  co_await start_next_round(round, false, std::move(lost), cancel);
  RoundEnd why(RoundEnd::Kind::kMembership, 0, "node " + node + " joins");
  why.next_round = next_round_hint();
  const std::string none;
  const std::string over_key = round_prefix(round) + "over";
  const std::string encoded = why.encode();
  co_await store_.compare_set(over_key, none, encoded, cancel);
}

}  // namespace ddprun::rendezvous
