#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "common/clock.h"
#include "rendezvous/rendezvous_handler.h"
#include "rendezvous/round/key_waiter.h"
#include "rendezvous/round/round_coordinator.h"
#include "rendezvous/round/round_requests.h"
#include "store/loop_store.h"
#include "store/store.h"

namespace ddprun::rendezvous {

/// The round protocol over the agents' shared store, under the round's prefix:
/// "over" holds the RoundEnd (compare-and-set: the first writer wins), "done/<k>"
/// marks node k finished, "done" counts the finished nodes and "all_done" is set by
/// the last. Waits are KeyWaiters on connections of their own.
class StoreRound : public RoundCoordinator {
 public:
  struct Options {
    RendezvousInfo info;
    std::string prefix;       // of the round's keys, e.g. "ddprun/c10d/<run>/round/3/"
    std::string store_where;  // for messages: "h:p", or etcd's endpoints
    /// A new connection for each wait, and one for the round's quick requests.
    std::function<std::unique_ptr<store::LoopStore>()> connect;
    /// Elastic rounds: the keys that show the members alive, read every heartbeat
    /// interval (one of the round's quick requests), and the members gone,
    /// judged from what those keys held (nullopt: not there); null where the
    /// membership is fixed.
    std::vector<std::string> liveness_keys;
    std::vector<std::pair<int, std::string>> watched;  // the members checked: (group rank, id)
    std::function<std::vector<std::string>(const std::vector<std::optional<std::string>>&)>
        dead_members;
    std::chrono::milliseconds heartbeat_interval{5000};
    /// Elastic rounds: begins the next round (a coroutine, run as one of the round's
    /// requests; throws Error); null for static ones.
    std::function<Task<void>(bool failure, std::set<std::string> lost, CancelSignal&)> start_next;
    /// Elastic rounds: the key that holds the rendezvous state, and the spares waiting
    /// in what it holds (throws Error where it holds none); null for static ones.
    std::string state_key;
    std::function<std::vector<std::string>(const std::string&)> spares_in;
    /// Elastic rounds: counts a failure of this node (as start_next); null for static
    /// ones.
    std::function<Task<void>(std::string reason, CancelSignal&)> note_failure;
    /// Where the state outlives the agents (etcd): closes the run as finished (as
    /// start_next), run by the node that sets "all_done" before it does: every node
    /// waits for "all_done" before it leaves, so none leaves before the run is closed,
    /// and one node closes it. Null elsewhere.
    std::function<Task<void>(CancelSignal&)> close_run;
    /// Elastic rounds: where the round this node began last is (RoundEnd::next_round;
    /// empty: none), made when this node's end is written, after the requests before
    /// it, and asked only where this round began the next (start_next_round()); and
    /// what to do with that of the end that won (this node's or another's). Null for
    /// static ones.
    std::function<std::string()> next_round_hint;
    std::function<void(const std::string&)> on_next_round;
    /// Who wrote the round's end, as this node learns it: another node where the end
    /// watch saw it first, then the answer to this node's own end, which settles it
    /// (nothing known where it got none: `end` is this node's own then). Null: not
    /// asked.
    std::function<void(const RoundEnd& end, std::optional<bool> this_node)> on_end_writer;
  };

  StoreRound(boost::asio::io_context& io, Clock& clock, Options options);
  ~StoreRound() override;

  void watch_end(OnEnd on_end, OnLost on_lost) override;
  void watch_members(OnDead on_dead, OnLost on_lost) override;
  void end(const RoundEnd& mine, OnEnd on_told) override;
  void finish_node(OnAllDone on_all_done, OnLost on_lost) override;
  void unfinished(OnUnfinished on_read) override;
  void start_next_round(bool failure, const std::set<std::string>& lost) override;
  void after_requests(OnAllDone on_settled) override;
  void spares(OnSpares on_read) override;
  void note_failure(const std::string& reason) override;
  /// Parts are "gather/<name>/<k>" keys of the round, read a few to a request: a store
  /// answers at most 64 MiB at once (TCPStore's reply bound) and a part is at most
  /// 8 MiB (its value bound), so that these many parts of any size fit. Where the
  /// store's wait brings the values (etcd), the parts are the wait's: read once.
  static constexpr size_t kPartsPerRead = 7;
  void gather(const std::string& name, const std::string& mine, std::chrono::milliseconds timeout,
              OnGathered on_gathered) override;
  void gather_from(const std::string& name, const std::string& mine, std::vector<int> group_ranks,
                   std::chrono::milliseconds timeout, OnGathered on_gathered) override;
  /// The round's largest number is its "max/<name>" key.
  void share_max(const std::string& name, int64_t mine, OnMax on_max) override;
  /// This node's value is the round's "pub/<name>/<k>" key.
  void publish(const std::string& name, const std::string& value) override;
  void read_published(const std::string& name, std::vector<int> group_ranks,
                      OnPublished on_read) override;
  void stop() override;

 private:
  std::string lost(const std::string& why) const;
  RoundEnd told(const std::string& value) const;
  std::vector<std::string> done_keys() const;
  void all_done();
  void check_all_marked();
  void read_marks();  // check_all_marked()'s where "all_done" is not there
  RoundRequests::Work close_run() const;
  void check_members(const OnDead& on_dead, const OnLost& on_lost);
  void drop_finished(std::vector<std::string> dead, const OnDead& on_dead, const OnLost& on_lost);
  // Reads what is at `keys` ("" where nothing), a few keys to a request, after
  // `read_so_far`; nullopt where the store refused or failed.
  using OnParts = std::function<void(std::optional<std::vector<std::string>>)>;
  void read_parts(std::vector<std::string> keys, OnParts on_read,
                  std::vector<std::string> read_so_far = {});

  boost::asio::io_context& io_;
  Clock& clock_;
  Options options_;
  std::unique_ptr<Timer> heartbeat_;
  RoundRequests& requests();
  std::unique_ptr<RoundRequests> requests_;  // the round's quick requests, on one connection
  struct Gathering {  // one gather() in progress, by name: several may overlap
    std::unique_ptr<Timer> timer;
    std::unique_ptr<KeyWaiter> wait;
    std::shared_ptr<bool> answered;  // true once it answered, or was replaced
  };
  std::map<std::string, Gathering> gatherings_;
  std::unique_ptr<KeyWaiter> end_wait_;
  std::unique_ptr<KeyWaiter> done_wait_;
  OnAllDone all_done_;                     // finish_node()'s, until called
  std::map<std::string, int64_t> shared_;  // share_max(): what this node last wrote
  bool began_next_ = false;                // start_next_round() asked: end() says where it is
  bool end_settled_ = false;  // this node's end answered, or refused: on_end_writer said
};

}  // namespace ddprun::rendezvous
