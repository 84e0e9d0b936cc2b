#pragma once

#include <functional>
#include <memory>
#include <string>

#include "rendezvous/join/state_store.h"
#include "store/etcd/etcd_client.h"

namespace ddprun::rendezvous {

/// The rendezvous state in etcd, every step one request. "<prefix>state" holds
/// "<version> <epoch>\n<state JSON>"; a write that concerns participants puts the
/// same value in "<prefix>epoch" (for agents of earlier versions, which wait on it) and
/// its first line in "<prefix>wake". A read is one transaction (the state, when the
/// epoch last moved, and the announcements of the round last seen); a write is one
/// transaction on the state's mod revision, which when it loses announces the node and
/// reads the state afresh; a wait is one watch from just after the revision read: on
/// "state", whose event is the next read, or, for a participant, on "wake" (a few
/// bytes to each waiting node, not the state). Announcements are held by the node's
/// lease: etcd removes them when the node leaves or dies.
///
/// Every write also puts the state's first line in "<prefix>head" (with the version and
/// epoch, in the same transaction) and the newest announcement it took in (its create
/// revision) in "<prefix>forming/<round>/taken": a node joining a forming round reads
/// and watches these few bytes, not the state (see DynamicJoiner). The first to
/// announce itself for a round also creates "<prefix>forming/<round>/folder" under its
/// lease, and writes for the others; should it die, the key goes with its lease and the
/// next node to announce itself takes its place.
class EtcdStateStore : public StateStore, public StateHeads {
 public:
  /// `lease`: the node's current lease (it changes if the lease ever expired).
  /// `keep_head`: nodes announce themselves and wait on the head (above); else each
  /// reads the state and writes itself in.
  EtcdStateStore(std::unique_ptr<store::EtcdClient> client, std::string prefix,
                 std::function<int64_t()> lease, bool keep_head = true);

  /// The reads of a joiner's first look, to put in another transaction: the head
  /// (head(-1, {})) where this store keeps one, else the state (read()). prime() takes
  /// that transaction's result, which the next such call returns without a request.
  std::vector<store::EtcdOp> first_reads() const {
    return keep_head_ ? head_reads(-1, {}) : reads(round_seen_);
  }
  void prime(const store::EtcdClient::TxnResult& r);

  /// Every request is EtcdClient's loop call.
  Task<StateSnapshot> read(CancelSignal& cancel) override;
  Task<bool> write(const StateSnapshot& from, const std::string& to, Wakes wakes,
                   const std::optional<Announcement>& on_loss, CancelSignal& cancel) override;
  Task<void> wake(CancelSignal& cancel) override;
  /// The watch's stream is read as the loop's completions (EtcdClient's loop watch).
  Task<void> wait(const StateSnapshot& from, bool participant, std::chrono::milliseconds timeout,
                  CancelSignal& cancel) override;
  Task<std::vector<std::pair<std::string, int>>> announced(int round,
                                                           CancelSignal& cancel) override;
  StateHeads* heads() override { return keep_head_ ? this : nullptr; }
  std::optional<StateHead> written_head() const override { return written_head_; }
  Task<std::optional<StateHead>> head(int round, std::vector<std::string> with,
                                      CancelSignal& cancel) override;
  Task<void> wait_head(const StateHead& from, std::chrono::milliseconds timeout,
                       CancelSignal& cancel) override;
  /// The announcement's create revision (1 for the first).
  Task<Folding> folding(int round, CancelSignal& cancel) override;
  Task<bool> take_over_folding(const Announcement& a, int64_t slot, const std::string& from,
                               CancelSignal& cancel) override;
  Task<int64_t> announce(const Announcement& a, CancelSignal& cancel) override;
  Task<void> wait_announced(int round, std::chrono::milliseconds timeout,
                            CancelSignal& cancel) override;
  std::string state_key() const override { return prefix_ + "state"; }
  DynamicState state_in(const std::string& value) const override;
  /// Watches miss nothing (they resume after the last revision seen): re-reading every
  /// second would only load etcd with as many reads as there are waiting nodes.
  std::chrono::milliseconds longest_wait() const override { return std::chrono::seconds(10); }

 private:
  std::vector<store::EtcdOp> reads(int round) const;
  StateSnapshot parse(const store::EtcdClient::TxnResult& r, int round);
  std::vector<store::EtcdOp> head_reads(int round, const std::vector<std::string>& with) const;
  std::optional<StateHead> parse_head(const store::EtcdClient::TxnResult& r, int round,
                                      size_t with) const;
  void remember_announced(int round, int64_t revision, const std::vector<store::EtcdKv>& kvs);
  /// Until one put under `key` (a prefix where `range_end` is given) after `revision`,
  /// or `timeout`.
  Task<void> watch_for_put(std::string key, std::string range_end, int64_t revision,
                           std::chrono::milliseconds timeout, CancelSignal& cancel);
  /// The state in `kv` (the state key's or the epoch key's), written after `before`.
  StateSnapshot snapshot(const store::EtcdKv& kv, const StateSnapshot& before) const;

  std::unique_ptr<store::EtcdClient> client_;
  std::string prefix_;
  std::function<int64_t()> lease_;
  bool keep_head_ = true;
  std::optional<StateSnapshot> fresh_;  // read by the last write or wait: the next read()
  std::optional<store::EtcdClient::TxnResult> primed_head_;  // prime()'s: the next head(-1, {})
  std::optional<StateHead> written_head_;                    // of the last write that won
  int round_seen_ = 0;                                       // in the state read or written last
  int listed_round_ = -1;  // the round `listed_` holds announcements of
  std::vector<std::pair<std::string, int>> listed_;
  int64_t listed_revision_ = 0;  // when `listed_` was read
  int64_t listed_newest_ = 0;    // the newest create revision in it
  int64_t said_taken_ = 0;       // the last put in "forming/<taken_round_>/taken"
  int taken_round_ = -1;
  std::string wake_later_;  // what wake() puts in "wake" (empty: nothing)
};

}  // namespace ddprun::rendezvous
