// One process of ddprun_round_sim's simulated nodes (round_sim.cc says what the sim
// does): its joiners connect, then run each phase on a byte from the parent and say
// when they are through.
#include "bench/round_sim_joiners.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/cancel_signal.h"
#include "common/coro.h"
#include "rendezvous/backends/rendezvous_backend.h"
#include "rendezvous/join/dynamic_joiner.h"
#include "rendezvous/join/etcd_state_store.h"
#include "rendezvous/round/round_end.h"
#include "rendezvous/round/shared_max.h"
#include "rendezvous/round/store_round.h"
#include "store/etcd/etcd_endpoint.h"
#include "store/etcd/etcd_store.h"
#include "store/loop_store.h"
#include "store/tcpstore/store_connect.h"

namespace ddprun::bench {
namespace {

// A node's hang report: its ranks' state and stacks (8 ranks with a few KB of Python
// and native stacks each), and a verdict (the culprit and the summary).
constexpr size_t kHangPartBytes = 16 * 1024;
constexpr size_t kHangVerdictBytes = 512;

// Requests per node in the floor phase: about what a round takes.
constexpr int kFloorRequests = 7;
static_assert(kFloorRequests % 2 == 1, "the floor ends on a read");

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::unique_ptr<store::EtcdClient> etcd_client(const Meeting& m) {
  return std::make_unique<store::EtcdClient>(store::parse_etcd_endpoints(m.etcd),
                                             std::chrono::seconds(300));
}

// Every report, read as StoreRound's gather reads them: the wait's values where the wait
// brings them (etcd), else a wait, then a few to a request. False: not all there in time.
Task<bool> read_reports(store::LoopStore& s, std::vector<std::string> reports,
                        CancelSignal& cancel) {
  if (s.wait_brings_values()) {
    auto parts = co_await s.wait_for(std::move(reports), std::chrono::seconds(120), cancel);
    co_return parts.has_value();
  }
  bool there = co_await s.wait_until_there(reports, std::chrono::seconds(120), cancel);
  for (size_t k = 0; k < reports.size(); k += rendezvous::StoreRound::kPartsPerRead) {
    auto end = std::min(reports.size(), k + rendezvous::StoreRound::kPartsPerRead);
    std::vector<std::string> some(reports.begin() + static_cast<std::ptrdiff_t>(k),
                                  reports.begin() + static_cast<std::ptrdiff_t>(end));
    co_await s.get_now(std::move(some), cancel);
  }
  co_return there;
}

// One node's part of a hang's exchange: it shares its report; group rank 0 (every node,
// `hang_all`) waits for every report and reads them (read_reports()), then shares its
// verdict, which the others wait for.
Task<void> exchange_hang_report(store::LoopStore& s, const std::string& at, int rank, int nodes,
                                bool hang_all, CancelSignal& cancel, int& failed) {
  co_await s.set(at + "hang/" + std::to_string(rank), std::string(kHangPartBytes, 'r'), cancel);
  if (hang_all || rank == 0) {
    std::vector<std::string> reports;
    for (int k = 0; k < nodes; ++k) reports.push_back(at + "hang/" + std::to_string(k));
    if (!co_await read_reports(s, std::move(reports), cancel)) ++failed;
  }
  if (hang_all) co_return;
  if (rank == 0) co_await s.set(at + "verdict", std::string(kHangVerdictBytes, 'v'), cancel);
  std::vector<std::string> verdict{at + "verdict"};
  if (!co_await s.wait_for(std::move(verdict), std::chrono::seconds(120), cancel)) ++failed;
}

// Runs `io` until a byte comes on `go`: what it serves (waits on their way to being
// armed) goes on meanwhile. False where `go` fails.
bool run_until_go(boost::asio::io_context& io, int go) {
  int flags = ::fcntl(go, F_GETFL);
  boost::asio::posix::stream_descriptor pipe(io, ::dup(go));
  char byte = 0;
  bool came = false, ok = false;
  pipe.async_read_some(boost::asio::buffer(&byte, 1),
                       [&](const boost::system::error_code& ec, size_t n) {
                         came = true;
                         ok = !ec && n == 1;
                       });
  while (!came && io.run_one() > 0) {
  }
  ::fcntl(go, F_SETFL, flags);  // the duplicate shares `go`'s flags: Asio made it non-blocking
  return ok;
}
}  // namespace

int run_joiners(const Meeting& meet, int first, int count, int nodes, bool watch_all, bool hang_all,
                int floor_waves, int ready, int go) {
  boost::asio::io_context io;
  CancelSignal cancel;
  std::vector<std::unique_ptr<store::LoopStore>> stores(count);
  std::vector<std::unique_ptr<rendezvous::EtcdStateStore>> states(count);
  int failed = 0;
  for (int i = 0; i < count; ++i) {
    boost::asio::co_spawn(
        io,
        [&, i]() -> Task<void> {
          if (meet.etcd.empty()) {
            store::TcpStoreClient::Options o;
            o.timeout = std::chrono::seconds(300);
            stores[i] = store::on_loop(co_await store::open_store_client(
                "127.0.0.1", meet.port, o,
                std::chrono::steady_clock::now() + std::chrono::seconds(60), cancel));
            co_return;
          }
          // Both connections made now (a first request each), not inside a phase.
          stores[i] = store::on_loop(std::make_unique<store::EtcdStore>(etcd_client(meet), ""));
          std::vector<std::string> none(1, meet.prefix + "none");
          co_await stores[i]->get_now(std::move(none), cancel);
          states[i] = std::make_unique<rendezvous::EtcdStateStore>(
              etcd_client(meet), meet.prefix, [] { return int64_t{0}; });
          std::vector<std::string> nothing_more;
          co_await states[i]->head(-1, nothing_more, cancel);
        },
        [&](const std::exception_ptr& e) {
          if (!e) return;
          ++failed;
          try {
            std::rethrow_exception(e);
          } catch (const std::exception& ex) {
            if (failed == 1) std::fprintf(stderr, "connecting: %s\n", ex.what());
          }
        });
  }
  io.run();
  // Made before any phase, as an agent makes its joiner at its start.
  rendezvous::DynamicConfig config{nodes, nodes, 300'000};
  std::vector<std::unique_ptr<rendezvous::DynamicJoiner>> joiners;
  std::vector<std::string> ids;
  for (int i = 0; i < count; ++i) {
    if (meet.etcd.empty()) {
      joiners.push_back(
          std::make_unique<rendezvous::DynamicJoiner>(*stores[i], meet.prefix, config, wall_ms));
    } else {
      joiners.push_back(std::make_unique<rendezvous::DynamicJoiner>(
          *stores[i], std::move(states[i]), meet.prefix, config, wall_ms));
    }
    ids.push_back("10." + std::to_string(first + i) + "/1/29500");
  }
  char byte = failed ? 'x' : 'r';
  if (::write(ready, &byte, 1) != 1 || ::read(go, &byte, 1) != 1 || failed) return 1;
  // The floor: every node at once sends as many plain requests as a round takes (a read
  // of its own key and a set of it, in turn), so that what the machine itself adds per
  // request as the connections grow is measured beside the protocol. A read last: a SET
  // has no answer, and one still in flight would count in the next phase.
  for (int wave = 0; wave < floor_waves; ++wave) {
    io.restart();
    for (int i = count * wave / floor_waves; i < count * (wave + 1) / floor_waves; ++i) {
      boost::asio::co_spawn(
          io,
          [&, i]() -> Task<void> {
            std::string key = meet.prefix + "floor/10." + std::to_string(first + i) + "/1/29500";
            for (int k = 1; k <= kFloorRequests; ++k) {
              if (k % 2 == 0) {
                co_await stores[i]->set(key, std::to_string(k), cancel);
              } else {
                std::vector<std::string> keys(1, key);
                co_await stores[i]->get_now(std::move(keys), cancel);
              }
            }
          },
          [&](const std::exception_ptr& e) { failed += e ? 1 : 0; });
    }
    io.run();
  }
  byte = failed ? 'x' : 'r';
  if (::write(ready, &byte, 1) != 1 || ::read(go, &byte, 1) != 1 || failed) return 1;
  std::vector<rendezvous::RoundSeat> seats(count);
  // Node i joins `round`: where `told_by` names a key, once that key is there (its
  // wait sent at once, as an agent's end watch waits while its round runs); the first
  // node of all, where `restarts`, starts the round after a failure and tells the
  // others that the round before is over first, as an agent whose worker failed does.
  auto spawn_join = [&](int i, int round, const std::string* told_by, bool restarts) {
    boost::asio::co_spawn(
        io,
        [&, i, round, told_by, restarts]() -> Task<void> {
          if (told_by) {  // and why: its value read, as an agent's end watch reads it
            std::vector<std::string> keys(1, *told_by);
            auto why =
                co_await stores[i]->wait_for(std::move(keys), std::chrono::seconds(300), cancel);
            if (why)
              joiners[i]->told_next_round(rendezvous::RoundEnd::parse(why->at(0)).next_round);
          }
          if (restarts) {
            std::string over = meet.prefix + "round/" + std::to_string(round - 1) + "/over";
            std::string none;
            co_await joiners[i]->start_next_round(round - 1, true, {}, cancel);
            rendezvous::RoundEnd end{rendezvous::RoundEnd::Kind::kRestart, 1,
                                     "rank 0 exited with 1"};
            end.next_round = joiners[i]->next_round_hint();
            std::string why = end.encode();
            co_await stores[i]->compare_set(over, none, why, cancel);
          }
          // One node reads the whole state, as the primary agent does; the others
          // their seats.
          bool primary = first == 0 && i == 0;
          auto got = co_await joiners[i]->join(ids[i], 1, round, std::chrono::seconds(300), cancel,
                                               primary);
          bool whole = got.seat.group_world_size == nodes && got.seat.world_size == nodes;
          if (got.round != round || !whole || (primary && !got.state)) ++failed;
          seats[i] = std::move(got.seat);
        },
        [&, i](const std::exception_ptr& e) {
          if (!e) return;
          ++failed;
          try {
            std::rethrow_exception(e);
          } catch (const std::exception& ex) {
            std::fprintf(stderr, "joiner %d: %s\n", first + i, ex.what());
          }
        });
  };
  // Round 0: every node joins.
  io.restart();
  for (int i = 0; i < count; ++i) spawn_join(i, 0, nullptr, false);
  io.run();
  byte = failed ? 'x' : 'r';
  if (::write(ready, &byte, 1) != 1 || ::read(go, &byte, 1) != 1 || failed) return 1;
  // Round 1, a restart: every other node's wait for round 0's end goes out (a phase
  // of its own, not timed), then the first node's worker fails.
  const std::string over = meet.prefix + "round/0/over";
  io.restart();
  for (int i = 0; i < count; ++i) {
    if (first != 0 || i != 0) spawn_join(i, 1, &over, false);
  }
  io.poll();  // each wait sent
  byte = failed ? 'x' : 'r';
  if (::write(ready, &byte, 1) != 1 || !run_until_go(io, go) || failed) return 1;
  if (first == 0) spawn_join(0, 1, nullptr, true);
  io.run();
  byte = failed ? 'x' : 'r';
  if (::write(ready, &byte, 1) != 1 || ::read(go, &byte, 1) != 1 || failed) return 1;
  // One interval of the running round: every node at once, as agents are.
  io.restart();
  for (int i = 0; i < count; ++i) {
    boost::asio::co_spawn(
        io,
        [&, i]() -> Task<void> {
          int rank = seats[i].group_rank;
          std::vector<std::string> watched;  // --watch=all: every member, by the ids' pattern
          for (const auto& [k, id] : seats[i].watched) watched.push_back(id);
          if (watch_all) {
            watched.clear();
            for (int k = 0; k < nodes; ++k) watched.push_back("10." + std::to_string(k) + "/1/29500");
          }
          store::LoopStore& s = *stores[i];
          const std::string& at = meet.prefix;
          co_await s.set(at + "hb/" + ids[i], "1", cancel);
          co_await s.get_now(rendezvous::member_keys(at + "hb/", watched), cancel);
          if (watch_all) {  // every node's own key, read by every node
            co_await s.set(at + "max/" + std::to_string(rank), std::to_string(rank), cancel);
            std::vector<std::string> keys;
            for (int k = 0; k < nodes; ++k) keys.push_back(at + "max/" + std::to_string(k));
            co_await s.get_now(std::move(keys), cancel);
          } else {
            co_await rendezvous::raise_to(s, at + "max", rank, cancel);
            std::vector<std::string> top{at + "max"};
            co_await s.get_now(std::move(top), cancel);
          }
        },
        [&](const std::exception_ptr& e) { failed += e ? 1 : 0; });
  }
  io.run();
  byte = failed ? 'x' : 'r';
  if (::write(ready, &byte, 1) != 1 || ::read(go, &byte, 1) != 1 || failed) return 1;
  // A hang's exchange: every node at once.
  io.restart();
  for (int i = 0; i < count; ++i) {
    boost::asio::co_spawn(io,
                          exchange_hang_report(*stores[i], meet.prefix, seats[i].group_rank, nodes,
                                               hang_all, cancel, failed),
                          [&](const std::exception_ptr& e) { failed += e ? 1 : 0; });
  }
  io.run();
  byte = failed ? 'x' : 'r';
  if (::write(ready, &byte, 1) != 1) return 1;
  return failed ? 1 : 0;
}

}  // namespace ddprun::bench
