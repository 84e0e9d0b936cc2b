#pragma once
// The fixture of StoreRound's tests: nodes of a round over an in-memory store.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "rendezvous/round/store_round.h"
#include "store/memory_store.h"
#include "tests/fakes/manual_clock.h"

namespace ddprun::testing {

using store::MemoryStore;
using rendezvous::StoreRound;

/// A store whose every call fails, as one gone away does.
class LostStore : public MemoryStore {
 public:
  void set(const std::string&, const std::string&) override { fail(); }
  std::vector<std::optional<std::string>> get_now(const std::vector<std::string>&) override {
    fail();
  }

 private:
  [[noreturn]] static void fail() { throw StoreError("connection reset"); }
};

/// Counts how often each key is read.
class ReadCountingStore : public MemoryStore {
 public:
  std::vector<std::optional<std::string>> get_now(const std::vector<std::string>& keys) override {
    for (const auto& k : keys) ++reads_[k];
    return MemoryStore::get_now(keys);
  }
  int reads(const std::string& key) const {
    auto it = reads_.find(key);
    return it == reads_.end() ? 0 : it->second;
  }

 private:
  std::map<std::string, int> reads_;
};

class StoreRoundTest : public ::testing::Test {
 protected:
  static StoreRound::Options options(int group_rank) {
    StoreRound::Options o;
    o.info.group_rank = group_rank;
    o.info.group_world_size = 2;
    o.prefix = "ddprun/test/round/0/";
    o.store_where = "memory";
    o.connect = [] { return on_loop(std::make_unique<MemoryStore>()); };
    return o;
  }
  // A node whose reads see `store` (share_max(), ...).
  std::unique_ptr<StoreRound> sharing_node(int group_rank, MemoryStore& store) {
    StoreRound::Options o = options(group_rank);
    o.connect = [&store] { return on_loop(store); };
    return std::make_unique<StoreRound>(io_, clock_, std::move(o));
  }
  // share_max(), its answer awaited on the loop.
  int64_t share(StoreRound& node, const std::string& name, int64_t mine) {
    int64_t top = -1;
    node.share_max(name, mine, [&top](int64_t t) { top = t; });
    run_a_while();
    return top;
  }
  // Group rank 0 of two, watching b ("hb/b" every 100 ms), gone once `b_gone`.
  static StoreRound::Options watching_b(const bool& b_gone) {
    StoreRound::Options o = options(0);
    o.watched = {{1, "b"}};
    o.heartbeat_interval = std::chrono::milliseconds(100);
    o.liveness_keys = {"hb/b"};
    o.dead_members = [&b_gone](const std::vector<std::optional<std::string>>&) {
      return b_gone ? std::vector<std::string>{"b"} : std::vector<std::string>{};
    };
    return o;
  }
  // watching_b()'s node finishes (b is never lost), then the loop runs a while.
  void finish_watching_b(StoreRound& round, bool& all_done) {
    round.watch_members([](const std::vector<std::string>&) { ADD_FAILURE() << "b is not lost"; },
                        [](const std::string&) {});
    round.finish_node([&all_done] { all_done = true; }, [](const std::string&) {});
    run_a_while();
  }
  // Runs the loop a while.
  void run_a_while() {
    io_.restart();  // after it ran out of work
    io_.run_for(std::chrono::milliseconds(50));
  }

  MemoryStore store_;  // outlives the loop: a wait left in progress ends with the loop
  boost::asio::io_context io_;
  ManualClock clock_;
};

}  // namespace ddprun::testing
