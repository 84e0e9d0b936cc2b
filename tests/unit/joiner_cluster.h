#pragma once

// Nodes of an elastic rendezvous over one MemoryStore, for the joiner's tests: each
// node is a thread joining on a loop of its own, the wall clock is fake, every wait is
// bounded.

#include <atomic>
#include <functional>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "rendezvous/join/dynamic_joiner.h"
#include "store/memory_store.h"
#include "tests/helpers/run_task.h"

namespace ddprun::rendezvous::joiner_testing {

using namespace std::chrono_literals;
using ddprun::testing::run_task;

// Joins on a loop of its own, as an agent does on its loop, and returns the whole
// state of the round it joined (asked for: most nodes read their seat only).
inline DynamicState join(DynamicJoiner& j, const std::string& node, int workers, int min_round,
                         std::chrono::milliseconds timeout) {
  CancelSignal cancel;
  JoinedRound joined = run_task(j.join(node, workers, min_round, timeout, cancel, true));
  if (!joined.state) throw std::logic_error("the whole state was asked for, not read");
  return std::move(*joined.state);
}

// Joins as most nodes do: their seat, the whole state only where it was read anyway.
inline JoinedRound take_seat(DynamicJoiner& j, const std::string& node, int workers,
                             std::chrono::milliseconds timeout) {
  CancelSignal cancel;
  return run_task(j.join(node, workers, 0, timeout, cancel));
}

// A quick step of the joiner, on a loop of its own.
inline void start_next(DynamicJoiner& j, int round, bool failure, std::set<std::string> lost) {
  CancelSignal cancel;
  run_task(j.start_next_round(round, failure, std::move(lost), cancel));
}
inline void close(DynamicJoiner&& j, bool failed = false) {
  CancelSignal cancel;
  run_task(j.close(failed, cancel));
}

struct Cluster {
  Cluster() = default;
  explicit Cluster(DynamicConfig nodes) : config(nodes) {}

  store::MemoryStore store;
  // The nodes' view of it: waits on their loops (the store's own wait list; the
  // memory view holds nothing of a wait, so the nodes' threads share it).
  std::unique_ptr<store::LoopStore> view = on_loop(store);
  std::atomic<int64_t> now_ms{0};
  DynamicConfig config{2, 3, 1000};

  DynamicJoiner joiner() { return joiner(*view); }
  // A node whose requests go through `over` (a store that counts or drops some).
  DynamicJoiner joiner(store::LoopStore& over) {
    return DynamicJoiner(over, "ddprun/c10d/test/", config, [this] { return now_ms.load(); });
  }

  // Until the shared state lists `n` participants (both joined, last call armed).
  void wait_for_participants(size_t n) {
    for (int i = 0; i < 10'000; ++i) {
      if (store.check({"ddprun/c10d/test/state"}) &&
          DynamicState::decode(store.get("ddprun/c10d/test/state", 1s)).participants.size() >= n) {
        return;
      }
      std::this_thread::sleep_for(1ms);
    }
    ADD_FAILURE() << "participants never reached " << n;
  }

  // Whether the shared state names `node` anywhere (in, waiting or a spare).
  bool names(const std::string& node) {
    DynamicState s = DynamicState::decode(store.get("ddprun/c10d/test/state", 1s));
    return s.participants.count(node) || s.waiting.count(node) || s.spares.count(node);
  }

  // `node` joins first, on a thread of its own, putting what it got in `got`; returned
  // once the shared state lists it (the round forms, waiting for the others).
  std::thread first_to_join(const std::string& node, DynamicState& got) {
    std::thread t([this, node, &got] {
      DynamicJoiner j = joiner();
      got = join(j, node, 2, 0, 5s);
    });
    wait_for_participants(1);
    return t;
  }

  // Each node joins on a thread of its own; returns the states they got.
  // `min_round` per node: a node coming back from round r joins r+1 or later; a new
  // node joins whatever round there is (0).
  std::vector<DynamicState> join_all(const std::vector<std::string>& nodes,
                                     std::function<void()> meanwhile = {},
                                     std::vector<int> min_round = {}) {
    min_round.resize(nodes.size(), min_round.empty() ? 0 : min_round.back());
    std::vector<DynamicState> got(nodes.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < nodes.size(); ++i) {
      threads.emplace_back([&, i] {
        DynamicJoiner j = joiner();
        try {
          got[i] = join(j, nodes[i], 2, min_round[i], 10s);
        } catch (const std::exception& e) {
          ADD_FAILURE() << nodes[i] << ": " << e.what();
        }
      });
    }
    if (meanwhile) meanwhile();
    for (auto& t : threads) t.join();
    return got;
  }
};

}  // namespace ddprun::rendezvous::joiner_testing
