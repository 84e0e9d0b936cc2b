#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "common/loop_waits.h"
#include "store/memory_store.h"
#include "rendezvous/rendezvous_handler.h"

namespace ddprun::testing {

/// What the agent did in one round, and the levers a test pulls to play the other
/// nodes. Callbacks reach the agent on its loop, as a real coordinator's do.
struct FakeRoundJournal {
  using RoundEnd = rendezvous::RoundEnd;

  rendezvous::RendezvousInfo info;
  std::optional<RoundEnd> written;  // the round's end as stored: the first writer wins
  std::vector<std::pair<bool, std::set<std::string>>> next_rounds;  // (failure, lost)
  std::vector<std::string> asked;  // "end", "start_next_round", "note_failure": in order
  bool node_finished = false;
  bool others_done = false;
  std::vector<std::pair<std::string, std::string>> shared;  // gather(): (name, this node's part)
  std::map<std::string, int64_t> shared_max;  // share_max(): this node's latest, by name
  std::map<std::string, std::string> published;  // publish(): this node's latest, by name
  std::vector<int> unfinished;                // what unfinished() answers
  std::function<void()> on_node_finished;     // runs on the loop after finish_node()
  bool end_unanswered = false;  // the store takes this node's end but never answers
  bool stopped = false;

  // -- levers (call on the loop's thread) --
  /// Another node ends the round.
  void end_by_other(const RoundEnd& end) {
    if (!written) written = end;
    deliver([this] {
      if (on_end) on_end(*written);
    });
  }
  /// The liveness check finds these members gone.
  void report_dead(std::vector<std::string> dead) {
    deliver([this, dead] {
      if (on_dead) on_dead(dead);
    });
  }
  void lose_store(const std::string& what) {
    deliver([this, what] {
      if (on_lost) on_lost(what);
    });
  }
  /// Every other node finished (now, or before this one does).
  void all_done() {
    others_done = true;
    deliver([this] {
      if (on_all_done) on_all_done();
    });
  }

  // -- wiring --
  void deliver(std::function<void()> f) {
    boost::asio::post(*io, [this, f = std::move(f)] {
      if (!stopped) f();
    });
  }
  boost::asio::io_context* io = nullptr;
  rendezvous::RoundCoordinator::OnEnd on_end;
  rendezvous::RoundCoordinator::OnLost on_lost;
  rendezvous::RoundCoordinator::OnDead on_dead;
  rendezvous::RoundCoordinator::OnAllDone on_all_done;
};

/// Everything a FakeRendezvous was asked, kept by the test (the agent owns the
/// handler and destroys it when the job ends).
struct FakeRendezvousJournal {
  /// Members of each round by round number (this node is always the first). Rounds
  /// past the end use the last entry. Each node runs the same number of workers.
  std::vector<std::vector<std::string>> members = {{"a"}};
  int restarts = 0;  // counted from next_rounds with failure = true
  std::vector<std::shared_ptr<FakeRoundJournal>> rounds;
  /// Nodes kept out of every round (as the rendezvous state would say).
  std::vector<rendezvous::RendezvousInfo::Quarantined> quarantined;
  /// What clock_offset() says.
  std::optional<std::chrono::milliseconds> clock_offset;
  bool finished_job = false;
  bool job_failed = false;
  std::string kept_out;  // keep_out()'s reason
  std::string told_unfit;  // what a node unfit before its first join told the others
  bool cancelled = false;
  /// What spares() reads: the nodes waiting as spares (answered on the loop).
  std::vector<std::string> spares_waiting;
  /// share_max(): the largest number the other nodes share, by name.
  std::map<std::string, int64_t> others_max;
  /// published(): what the other nodes (group ranks 1, 2, ...) published, by name.
  std::map<std::string, std::vector<std::string>> others_published;
  /// gather(): what the other nodes shared, by name, in group-rank order with this
  /// node's left out.
  std::map<std::string, std::vector<std::string>> others_shared;
  /// This node's group rank in every round (the members' order aside).
  int group_rank = 0;
  /// Runs in next_rendezvous(), on the agent's loop.
  std::function<void()> on_join;
  /// The join waits for the other nodes until cancel() (a wait on the agent's loop).
  bool join_waits = false;
};

class FakeRound : public rendezvous::RoundCoordinator {
 public:
  FakeRound(std::shared_ptr<FakeRoundJournal> j, FakeRendezvousJournal& rdzv)
      : j_(std::move(j)), rdzv_(rdzv) {}
  ~FakeRound() override {
    j_->stopped = true;
    *alive_ = false;
  }

  void watch_end(OnEnd on_end, OnLost on_lost) override {
    j_->on_end = std::move(on_end);
    j_->on_lost = std::move(on_lost);
  }
  void watch_members(OnDead on_dead, OnLost) override { j_->on_dead = std::move(on_dead); }
  // The store's answer comes after our own write reached our watch; even after stop(),
  // as the real round's does (a signalled end follows the attempt), but not once the
  // round is gone.
  void end(const rendezvous::RoundEnd& mine, OnEnd on_told) override {
    j_->asked.emplace_back("end");
    if (!j_->written) j_->end_by_other(mine);
    if (j_->end_unanswered) return;
    boost::asio::post(*j_->io, [alive = alive_, f = std::move(on_told), end = *j_->written] {
      if (*alive) f(end);
    });
  }
  void spares(OnSpares on_read) override {
    boost::asio::post(*j_->io, [alive = alive_, f = std::move(on_read), s = rdzv_.spares_waiting] {
      if (*alive) f(s);
    });
  }
  void finish_node(OnAllDone on_all_done, OnLost on_lost) override {
    j_->node_finished = true;
    j_->on_all_done = std::move(on_all_done);
    j_->on_lost = std::move(on_lost);
    if (j_->on_node_finished) j_->deliver(j_->on_node_finished);
    if (j_->info.group_world_size == 1 || j_->others_done) j_->all_done();
  }
  void unfinished(OnUnfinished on_read) override { on_read(j_->unfinished); }
  void start_next_round(bool failure, const std::set<std::string>& lost) override {
    j_->asked.emplace_back("start_next_round");
    if (!j_->next_rounds.empty()) return;  // once, whoever comes first
    j_->next_rounds.emplace_back(failure, lost);
    if (failure) ++rdzv_.restarts;
  }
  void note_failure(const std::string&) override { j_->asked.emplace_back("note_failure"); }
  // After the answer to end(), as the real round's requests come in order.
  void after_requests(OnAllDone on_settled) override {
    boost::asio::post(*j_->io, [alive = alive_, f = std::move(on_settled)] {
      if (*alive) f();
    });
  }
  // The others' parts are rdzv_.others_shared.
  void gather(const std::string& name, const std::string& mine, std::chrono::milliseconds timeout,
              OnGathered on_gathered) override {
    std::vector<int> everyone(static_cast<size_t>(j_->info.group_world_size));
    std::iota(everyone.begin(), everyone.end(), 0);
    gather_from(name, mine, std::move(everyone), timeout, std::move(on_gathered));
  }
  void gather_from(const std::string& name, const std::string& mine, std::vector<int> group_ranks,
                   std::chrono::milliseconds, OnGathered on_gathered) override {
    j_->shared.emplace_back(name, mine);
    if (!on_gathered) return;  // only shared
    const std::vector<std::string>& theirs = rdzv_.others_shared[name];
    std::vector<std::string> parts;
    for (int k : group_ranks) {
      auto other = static_cast<size_t>(k < j_->info.group_rank ? k : k - 1);
      parts.push_back(k == j_->info.group_rank ? mine : other < theirs.size() ? theirs[other] : "");
    }
    // Comes even after stop(), as the real round's does (a gather follows the attempt).
    boost::asio::post(*j_->io, [f = std::move(on_gathered), parts] { f(parts); });
  }
  // Answers at once, from within the call.
  void share_max(const std::string& name, int64_t mine, OnMax on_max) override {
    j_->shared_max[name] = mine;
    auto theirs = rdzv_.others_max.find(name);
    on_max(theirs == rdzv_.others_max.end() ? mine : std::max(mine, theirs->second));
  }
  void publish(const std::string& name, const std::string& value) override {
    j_->published[name] = value;
  }
  // Answers at once, from within the call.
  void read_published(const std::string& name, std::vector<int> group_ranks,
                      OnPublished on_read) override {
    std::vector<std::string> values;
    for (int k : group_ranks) values.push_back(published_by(name, k));
    on_read(std::move(values));
  }
  std::string published_by(const std::string& name, int group_rank) {
    if (group_rank == 0) {
      auto mine = j_->published.find(name);
      return mine == j_->published.end() ? "" : mine->second;
    }
    auto theirs = rdzv_.others_published.find(name);
    auto k = static_cast<size_t>(group_rank - 1);
    return theirs != rdzv_.others_published.end() && k < theirs->second.size() ? theirs->second[k] : "";
  }
  void stop() override { j_->stopped = true; }

 private:
  std::shared_ptr<FakeRoundJournal> j_;
  FakeRendezvousJournal& rdzv_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

/// A rendezvous that agrees at once: round r has journal.members[r] (this node
/// first, so group rank 0), restart_count counts failures, the store is in memory.
class FakeRendezvous : public rendezvous::RendezvousHandler {
 public:
  explicit FakeRendezvous(std::shared_ptr<FakeRendezvousJournal> journal)
      : journal_(std::move(journal)) {}

  Task<rendezvous::RendezvousInfo> next_rendezvous(int round, int local_world_size) override {
    if (journal_->on_join) journal_->on_join();
    if (journal_->join_waits) co_await sleep_for(std::chrono::hours(1), cancel_);
    const auto& all = journal_->members;
    rendezvous::RendezvousInfo info;
    info.round = round;
    info.restart_count = journal_->restarts;
    info.members = all[std::min<size_t>(static_cast<size_t>(round), all.size() - 1)];
    info.group_world_size = static_cast<int>(info.members.size());
    info.group_rank = journal_->group_rank;
    info.count_ranks(std::vector<int>(info.members.size(), local_world_size));
    info.master_addr = "127.0.0.1";
    info.master_port = 29500;
    info.quarantined = journal_->quarantined;
    co_return info;
  }
  store::LoopStore& loop_store() override { return *loop_store_; }
  std::unique_ptr<rendezvous::RoundCoordinator> coordinate(const rendezvous::RendezvousInfo& info,
                                                           boost::asio::io_context& io,
                                                           Clock&) override {
    auto j = std::make_shared<FakeRoundJournal>();
    j->info = info;
    j->io = &io;
    journal_->rounds.push_back(j);
    return std::make_unique<FakeRound>(j, *journal_);
  }
  bool primary() const override { return true; }
  // This node is the first member of every round (none in a static job).
  std::string node_id() const override {
    const auto& all = journal_->members;
    return all.empty() || all.front().empty() ? "" : all.front().front();
  }
  Task<void> finish_job(CancelSignal&) override {
    journal_->finished_job = true;
    co_return;
  }
  Task<void> job_failed(CancelSignal&) override {
    journal_->job_failed = true;
    co_return;
  }
  Task<void> keep_out(std::string reason, CancelSignal&) override {
    journal_->kept_out = std::move(reason);
    co_return;
  }
  Task<std::optional<std::chrono::milliseconds>> clock_offset(CancelSignal& /*cancel*/) override {
    co_return journal_->clock_offset;
  }
  void cancel() override {
    journal_->cancelled = true;
    cancel_.cancel();
  }

 private:
  std::shared_ptr<FakeRendezvousJournal> journal_;
  CancelSignal cancel_{"rendezvous cancelled"};
  store::MemoryStore store_;
  std::unique_ptr<store::LoopStore> loop_store_ = store::on_loop(store_);
};

}  // namespace ddprun::testing
