// join()'s write turn: apart from join() and from the steps it awaits (write, back_off
// in dynamic_joiner_steps.cc, end_round_to_join in dynamic_joiner_spare_join.cc), GCC
// 12's rule (docs/contributing.md).
#include "rendezvous/join/dynamic_joiner.h"

namespace ddprun::rendezvous {

// join()'s write of `decided`, the next state as `snap` read it: with the nodes that
// announced themselves taken in where the round still forms. A lost write leaves word
// that this node wants in (the next writer takes it in) and backs off: the state read
// then is returned. A spare's won write asks the running round to end for it.
Task<std::optional<StateSnapshot>> DynamicJoiner::write_turn(const StateSnapshot& snap,
                                                             const DynamicState& decided,
                                                             const std::string& node,
                                                             int local_world_size,
                                                             CancelSignal& cancel) {
  const DynamicState& read = snap.state;
  // A spare's write leaves the running round alone.
  bool asked_to_join = read.complete && decided.waiting.count(node) > 0;
  Announced announced;  // read only where the round still forms
  if (!read.complete && !read.closed && !decided.complete) {
    announced = co_await state_->announced(read.round, cancel);
  }
  DynamicState next = take_in_announced(read, decided, node, announced, wall_ms_(), config_);
  std::optional<Announcement> on_loss;
  if (!read.complete && announced_round_ != read.round) {
    on_loss = Announcement{read.round, node, local_world_size};
  }
  bool won = co_await write(snap, next, cancel, on_loss);
  if (!won && on_loss) announced_round_ = read.round;
  if (!won) {
    bool crowd = announced_round_ == read.round && !read.complete;
    std::optional<StateSnapshot> seen = co_await back_off(node, crowd, cancel);
    co_return seen;
  }
  if (asked_to_join) co_await end_round_to_join(read.round, node, cancel);
  co_return std::nullopt;
}

}  // namespace ddprun::rendezvous
