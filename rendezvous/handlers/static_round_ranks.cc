// A static round's ranks: node 0 counts them, each other node reads its own. Apart
// from next_rendezvous() on purpose: GCC 12 (docs/contributing.md) inlines a coroutine's frame
// allocation into a caller in the same unit but not always its deallocation, and then takes them
// for a mismatched new and delete (-Wmismatched-new-delete).
#include <charconv>

#include "rendezvous/handlers/static_rendezvous.h"
#include "store/loop_store.h"

namespace ddprun::rendezvous {
namespace {

// Node `node`'s first global rank and the world size, "<first> <world size>", as node 0
// counted them.
std::string ranks_key(int round, int node) {
  return static_round_prefix(round) + "ranks/" + std::to_string(node);
}

// "<first> <world size>" (ranks_key()): false where `value` is anything else.
bool parse_ranks(const std::string& value, int& first, int& world_size) {
  const char* end = value.data() + value.size();
  auto [space, ec] = std::from_chars(value.data(), end, first);
  if (ec != std::errc() || space == end || *space != ' ') return false;
  auto [last, ec2] = std::from_chars(space + 1, end, world_size);
  return ec2 == std::errc() && last == end && first >= 0;
}

}  // namespace

// Node 0: waits for every node's worker count, writes each node's first rank and the
// world size, and opens the round ("ready", last).
Task<RendezvousInfo> StaticRendezvous::open_round(RendezvousInfo info,
                                                  std::vector<std::string> keys) {
  const int round = info.round;
  auto counts = co_await client_->wait_for(keys, params_.join_timeout, cancel_);
  if (!counts) {
    auto there = co_await client_->get_now(keys, cancel_);
    throw join_timed_out(there, round);
  }
  std::vector<int> per_node = worker_counts(keys, *counts);
  info.count_ranks(per_node);
  // The previous round's worker keys go once every node is here (so every old worker
  // is gone) and before any new worker starts (they wait for "ready").
  server_->clear_except(kAgentPrefix);
  // Every node is in this round: the last one's keys are read by nobody any more (a
  // job restarted a thousand times keeps one round's keys, not a thousand).
  if (round > 0) server_->erase_prefix(static_round_prefix(round - 1));
  std::vector<std::string> set_keys, values;
  int first = 0;
  for (int k = 0; k < params_.max_nodes; ++k) {
    set_keys.push_back(ranks_key(round, k));
    values.push_back(std::to_string(first) + " " + std::to_string(info.world_size));
    first += per_node[k];
  }
  set_keys.push_back(static_round_prefix(round) + "ready");  // last: the ranks are there
  values.emplace_back("1");
  co_await client_->multi_set(std::move(set_keys), std::move(values), cancel_);
  co_return info;
}

// Every other node: waits for node 0 to open the round, then reads its own ranks.
Task<RendezvousInfo> StaticRendezvous::read_own_ranks(RendezvousInfo info, int local_world_size,
                                                      std::vector<std::string> keys) {
  const int round = info.round;
  std::vector<std::string> ready{static_round_prefix(round) + "ready"};
  bool opened = co_await client_->wait_until_there(ready, params_.join_timeout, cancel_);
  if (!opened) {
    auto there = co_await client_->get_now(keys, cancel_);
    throw join_timed_out(there, round);
  }
  std::vector<std::string> own{ranks_key(round, params_.node_rank)};
  auto got = co_await client_->get_now(own, cancel_);
  int first = 0;
  std::string value = got.at(0).value_or("");
  if (!parse_ranks(value, first, info.world_size) || info.world_size < first + local_world_size) {
    throw StoreError("the store at " + where() + " holds '" + value + "' at " + own[0] +
                     ", not this node's ranks (node 0 runs another ddprun, or another job uses "
                     "this port?)");
  }
  info.first_rank = first;
  co_return info;
}

}  // namespace ddprun::rendezvous
