#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "rendezvous/round/round_end.h"

namespace ddprun::rendezvous {

/// What the nodes of one round tell each other while their workers run: why the
/// round ends (the first node to say wins, everyone stops), when every node has
/// finished, which members stopped showing they are alive, and where the next round
/// begins. The agent drives it from its loop: every wait is asynchronous and every
/// callback comes on the loop's thread.
///
/// Thread-safety: the loop's thread only. Errors: a lost shared store reaches the
/// `on_lost` callbacks as one message naming the store ("lost the rendezvous store at
/// <where> (<why>)"); no method throws.
class RoundCoordinator {
 public:
  using OnEnd = std::function<void(RoundEnd)>;
  using OnLost = std::function<void(std::string)>;
  using OnDead = std::function<void(std::vector<std::string>)>;
  using OnAllDone = std::function<void()>;
  using OnGathered = std::function<void(std::vector<std::string>)>;
  using OnPublished = std::function<void(std::vector<std::string>)>;

  virtual ~RoundCoordinator() = default;

  /// Calls `on_end` once when the round ends (by any node's end(), this one's too),
  /// or `on_lost` when the shared store is gone.
  virtual void watch_end(OnEnd on_end, OnLost on_lost) = 0;

  /// Where nodes may come and go: checks the members' liveness every heartbeat
  /// interval and calls `on_dead` once with those gone, until stop(). Does nothing
  /// where the membership is fixed.
  virtual void watch_members(OnDead on_dead, OnLost on_lost) = 0;

  /// Publishes why the round ends; the first writer wins and every node adopts what
  /// it wrote. Calls `on_told` once with the winner, or with `mine` when the others
  /// cannot be told (said on stderr): one quick request, awaited on the loop (unless
  /// stop() comes first).
  virtual void end(const RoundEnd& mine, OnEnd on_told) = 0;

  /// This node's workers all succeeded: marks it done and calls `on_all_done` once
  /// every node of the round is (the end watch goes on meanwhile).
  virtual void finish_node(OnAllDone on_all_done, OnLost on_lost) = 0;

  /// Calls `on_read` with the group ranks of the round's nodes that have not finished
  /// yet (finish_node()): one read, awaited on the loop; empty when nobody else is
  /// waited for or the store cannot be read.
  using OnUnfinished = std::function<void(std::vector<int>)>;
  virtual void unfinished(OnUnfinished on_read) = 0;

  /// Begins the round after this one (once, whoever calls first): after a failure it
  /// counts as a restart, after a membership change it does not. `lost`: the members
  /// no longer believed alive (the others are expected back). Awaited on the loop, after what was
  /// asked before (after_requests() says when it is done). Nothing to do where rounds simply follow
  /// (static rendezvous).
  virtual void start_next_round(bool failure, const std::set<std::string>& lost) = 0;

  /// Calls `on_settled` once every request asked before it (the round's end, the next
  /// round's start, a failure counted) has been answered: the attempt awaits it before
  /// the round stops, so that none is cut short.
  virtual void after_requests(OnAllDone on_settled) = 0;

  /// Shares this node's part of something every node of the round contributes under
  /// `name` (its hang report, ...) and calls `on_gathered` once with every node's part,
  /// by group rank; a part that has not come within `timeout` is left empty. Gathers of
  /// different names may overlap; one of a name in progress is replaced by the next.
  /// Where `on_gathered` is empty, this node only shares its part (one write): a node
  /// that needs no part of the others' waits for and reads nothing (one node gathering
  /// costs N, every node gathering N squared).
  virtual void gather(const std::string& name, const std::string& mine,
                      std::chrono::milliseconds timeout, OnGathered on_gathered) = 0;
  /// As gather(), but waits for and reads the parts of the nodes `group_ranks` only,
  /// and calls `on_gathered` with those, in that order: a node that needs its
  /// neighbour's part costs the same at any size.
  virtual void gather_from(const std::string& name, const std::string& mine,
                           std::vector<int> group_ranks, std::chrono::milliseconds timeout,
                           OnGathered on_gathered) = 0;

  /// Counts a failure of this node's workers (`reason`) towards its quarantine
  /// (--node_failure_limit), before start_next_round(): a node at the limit is kept
  /// out of the next rounds for a while. Awaited on the loop as start_next_round() is;
  /// nothing where nodes cannot be kept out (static rendezvous). Errors are logged.
  virtual void note_failure(const std::string& reason) { (void)reason; }

  /// Calls `on_read` with the nodes waiting as hot spares for the next round, by one
  /// quick read of the shared store, awaited on the loop: they count towards MIN when
  /// members are lost. None where nodes cannot wait as spares (static rendezvous);
  /// nullopt when the store cannot be read.
  using OnSpares = std::function<void(std::optional<std::vector<std::string>>)>;
  virtual void spares(OnSpares on_read) = 0;

  /// Shares a number this node only ever raises (hang detection's longest interval
  /// between progress, ...) under `name` and calls `on_max` with the largest any node
  /// of the round has shared, this one's included: one key of the round holds the
  /// largest, raised by a compare-and-set when `mine` grew (again where another node
  /// raised it meanwhile), and read, awaited on the loop; each node's cost is the same
  /// at any size. `mine` when the store cannot be read.
  using OnMax = std::function<void(int64_t)>;
  virtual void share_max(const std::string& name, int64_t mine, OnMax on_max) = 0;

  /// Publishes this node's latest `value` under `name` (straggler detection's window,
  /// ...), replacing its last: one quick write. Errors are logged.
  virtual void publish(const std::string& name, const std::string& value) = 0;
  /// Reads what the nodes `group_ranks` published last under `name` ("" from a node that
  /// has not) and calls `on_read` with it, in that order: one read, awaited on the loop.
  /// Where the store cannot be read, `on_read` gets nothing (empty). One read at a time.
  virtual void read_published(const std::string& name, std::vector<int> group_ranks,
                              OnPublished on_read) = 0;

  /// Ends every watch and request in progress: no callback of theirs comes after.
  /// What is asked after (the hang report's gather) is asked anew.
  virtual void stop() = 0;
};

/// The round of a one-node job: nobody else to tell or wait for.
std::unique_ptr<RoundCoordinator> make_local_round(boost::asio::io_context& io);

}  // namespace ddprun::rendezvous
