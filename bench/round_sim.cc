// The round protocol alone at thousands of nodes: light joiners (no agent, no workers)
// in a few processes, each speaking the real protocol (DynamicJoiner over its own
// TCPStore connection) to ddprun's real store server, all asking into one round of
// exactly N nodes; then one starts the next round after a failure, tells the others
// that the round is over, and all join again (a restart). One node reads the whole state, as the
// primary agent does; the others read their seats (RoundSeat). Prints one JSON line: for each, the
// seconds from "go" (every joiner connected; for the restart, the failure) to every joiner in the
// completed round, and the store requests per node (for the restart, each node's wait to be told
// the round is over included). Then one interval of what the running round's nodes ask meanwhile:
// each beats (its heartbeat key), reads the liveness keys of the members it watches
// (watched_members.h) and shares hang detection's longest interval (shared_max.h) and reads it
// back; `--watch=all` has every node read every member's keys instead (how agents watched before),
// for comparison. `--etcd=HOST:PORT`: the same over a running etcd (each node a connection for its
// requests and one for the state, as an agent's joiner has), under a prefix of its own; no request
// counts then. On stderr, each phase's store requests per node by kind (c10d). The JSON also says
// the CPU its processes (the joiners, and the store it serves) used over the phases, connecting
// left out. `--start-on-stdin`: once every joiner is connected, says `connected` on stderr and
// starts the phases on a line on stdin (so that a caller can read a store's own counters at the
// phases' start); and once every node's wait for the restart is sent, says `armed` and starts
// the restart on a second line (so that a caller can wait until etcd watches for each, as it
// does for agents whose workers ran a while: else the restart's time holds their waits'
// reads and watches, and etcd's catching up of watches begun before the failure's write).
// `--floor-waves=K`: the floor's nodes send in K waves, one after the other, each
// process its share of each (N/K nodes' requests in flight at once, not N).
// Last, a hang's exchange: every node shares a report (kHangPartBytes); group rank 0 waits
// for every report, reads them and shares a verdict, which each other node waits for and
// reads (what agents do); `--hang=all` has every node wait for and read every report
// instead (how agents exchanged reports before).
//
//   ddprun_round_sim --nodes=N [--processes=P] [--watch=ring|all] [--etcd=HOST:PORT]
//                    [--start-on-stdin] [--floor-waves=K] [--hang=judged|all]
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/cancel_signal.h"
#include "common/coro.h"
#include <boost/asio/detached.hpp>

#include "os/proc_stat.h"
#include "rendezvous/dynamic_joiner.h"
#include "rendezvous/etcd_state_store.h"
#include "rendezvous/rendezvous_backend.h"
#include "rendezvous/round_end.h"
#include "rendezvous/shared_max.h"
#include "rendezvous/store_round.h"
#include "store/etcd/etcd_endpoint.h"
#include "store/etcd/etcd_store.h"
#include "store/loop_store.h"
#include "store/tcpstore/store_connect.h"
#include "store/tcpstore/tcp_store_server.h"

using namespace ddprun;

namespace {

// A node's hang report: its ranks' state and stacks (8 ranks with a few KB of Python
// and native stacks each), and a verdict (the culprit and the summary).
constexpr size_t kHangPartBytes = 16 * 1024;
constexpr size_t kHangVerdictBytes = 512;

// Requests per node in the floor phase: about what a round takes.
constexpr int kFloorRequests = 7;
static_assert(kFloorRequests % 2 == 1, "the floor ends on a read");

// The CPU seconds process `pid` has used so far (user and system).
double cpu_seconds(pid_t pid) {
  os::ProcStat st;
  if (!os::read_proc_stat(pid, st)) return 0;
  return static_cast<double>(st.utime + st.stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Where the joiners meet: ddprun's store server (its port), or etcd.
struct Meeting {
  int port = 0;
  std::string etcd;    // endpoint; empty: the store server
  std::string prefix;  // every key under it
};

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

// One process' joiners: connects them all, says so on `ready`, waits for a byte on
// `go`, then joins them all. Exit status 0 when every one got the completed round.
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

}  // namespace

int main(int argc, char** argv) {
  int nodes = 1024, processes = 4, floor_waves = 1;
  bool watch_all = false, hang_all = false, start_on_stdin = false;
  Meeting meet;
  meet.prefix = "sim/";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--watch=all" || a == "--watch=ring") {
      watch_all = a == "--watch=all";
    } else if (a == "--hang=all" || a == "--hang=judged") {
      hang_all = a == "--hang=all";
    } else if (a.rfind("--nodes=", 0) == 0) {
      nodes = std::atoi(a.c_str() + 8);
    } else if (a.rfind("--floor-waves=", 0) == 0) {
      floor_waves = std::atoi(a.c_str() + 14);
    } else if (a.rfind("--processes=", 0) == 0) {
      processes = std::atoi(a.c_str() + 12);
    } else if (a == "--start-on-stdin") {
      start_on_stdin = true;
    } else if (a.rfind("--etcd=", 0) == 0) {
      meet.etcd = a.substr(7);
      meet.prefix = "/sim/" + std::to_string(::getpid()) + "/";  // apart from earlier runs
    } else {
      std::fprintf(stderr,
                   "usage: ddprun_round_sim --nodes=N [--processes=P] [--watch=ring|all] "
                   "[--etcd=HOST:PORT] [--start-on-stdin] [--floor-waves=K] [--hang=judged|all]\n");
      return 2;
    }
  }
  if (nodes < 1 || processes < 1 || floor_waves < 1) {
    std::fprintf(stderr,
                 "ddprun_round_sim: --nodes, --processes and --floor-waves must be positive\n");
    return 2;
  }
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &files);
  if (files.rlim_cur < static_cast<rlim_t>(nodes) + 64) {
    std::fprintf(stderr, "ddprun_round_sim: %d nodes need %d descriptors, the limit is %llu\n",
                 nodes, nodes + 64, static_cast<unsigned long long>(files.rlim_cur));
    return 2;
  }
  // The children are forked before the server's thread exists; they learn its port
  // through a pipe. A child gone makes a write to its pipe fail, not end this process.
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<pid_t> children;
  std::vector<int> port_pipes, ready_pipes, go_pipes;
  for (int p = 0; p < processes; ++p) {
    int port_pipe[2], ready_pipe[2], go_pipe[2];
    if (::pipe(port_pipe) || ::pipe(ready_pipe) || ::pipe(go_pipe)) return 2;
    int first = nodes * p / processes, count = nodes * (p + 1) / processes - first;
    pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid == 0) {
      // Dies with the parent (which holds the server): never left waiting on a pipe.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(1);
      if (::read(port_pipe[0], &meet.port, sizeof(meet.port)) != sizeof(meet.port)) ::_exit(1);
      ::_exit(run_joiners(meet, first, count, nodes, watch_all, hang_all, floor_waves,
                          ready_pipe[1], go_pipe[0]));
    }
    // The child's ends are the child's alone: where it exits early, its ready pipe
    // ends and says so, never a wait on it.
    ::close(port_pipe[0]);
    ::close(ready_pipe[1]);
    ::close(go_pipe[0]);
    children.push_back(pid);
    port_pipes.push_back(port_pipe[1]);
    ready_pipes.push_back(ready_pipe[0]);
    go_pipes.push_back(go_pipe[1]);
  }
  store::TcpStoreServer server("127.0.0.1", 0);
  int port = server.port();
  for (int fd : port_pipes) {
    if (::write(fd, &port, sizeof(port)) != sizeof(port)) return 2;
  }
  bool all_ready = true;
  for (int fd : ready_pipes) {
    char byte = 0;
    all_ready = ::read(fd, &byte, 1) == 1 && byte == 'r' && all_ready;
  }
  if (!all_ready) {
    std::fprintf(stderr, "ddprun_round_sim: not every joiner could connect\n");
    return 1;
  }
  // The server's requests so far, by kind, and all of them.
  using Counts = decltype(server.request_counts());
  auto total = [](const Counts& counts) {
    uint64_t n = 0;
    for (const auto& [op, k] : counts) n += k;
    return n;
  };
  // Each kind's requests per node from `before` to `after` (c10d), on stderr.
  auto say_kinds = [&](const char* what, const Counts& before, const Counts& after) {
    std::string line;
    for (const auto& [op, now] : after) {
      uint64_t n = now;
      for (const auto& [was_op, was] : before) n -= was_op == op ? was : 0;
      if (n == 0) continue;
      char part[64];
      std::snprintf(part, sizeof(part), " %s %.2f", op.c_str(), static_cast<double>(n) / nodes);
      line += part;
    }
    if (meet.etcd.empty()) std::fprintf(stderr, "%s, per node:%s\n", what, line.c_str());
  };
  // Each phase: "go" to every process, then each says when its joiners are through.
  auto phase = [&] {
    auto start = std::chrono::steady_clock::now();
    for (int fd : go_pipes) {
      if (::write(fd, "g", 1) != 1) return -1.0;
    }
    for (int fd : ready_pipes) {
      char byte = 0;
      if (::read(fd, &byte, 1) != 1 || byte != 'r') return -1.0;
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  if (start_on_stdin) {
    std::fprintf(stderr, "connected\n");
    std::fflush(stderr);
    char line[16];
    if (!std::fgets(line, sizeof(line), stdin)) return 2;
  }
  // The CPU of the sim's processes, read while they are all alive.
  auto cpu = [&children] {
    double used = cpu_seconds(::getpid());
    for (pid_t pid : children) used += cpu_seconds(pid);
    return used;
  };
  double cpu_before = cpu();
  double floor_seconds = phase();
  Counts before = server.request_counts();
  double join_seconds = phase();
  Counts joined = server.request_counts();
  bool armed = phase() >= 0;      // every node's wait to be told sent (its requests counted
                                  // with the restart's)
  if (armed && start_on_stdin) {  // the caller sees them armed (etcd watching for each)
    std::fprintf(stderr, "armed\n");
    std::fflush(stderr);
    char line[16];
    if (!std::fgets(line, sizeof(line), stdin)) return 2;
  }
  double restart_seconds = armed ? phase() : -1;
  Counts restarted = server.request_counts();
  double watch_seconds = phase();
  Counts watched = server.request_counts();
  // Up to here, as before the hang's phase came: each child is through; none waited for.
  double cpu_used = cpu() - cpu_before;
  double hang_seconds = phase();
  bool ok = floor_seconds >= 0 && join_seconds >= 0 && restart_seconds >= 0 && watch_seconds >= 0 &&
            hang_seconds >= 0;
  // Where a phase failed, the children may wait for a phase never sent, or for nodes
  // gone: they are stopped.
  if (!ok) {
    for (pid_t pid : children) ::kill(pid, SIGKILL);
  }
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  Counts after = server.request_counts();
  say_kinds("rendezvous", before, joined);
  say_kinds("restart", joined, restarted);
  say_kinds("running round", restarted, watched);
  say_kinds("a hang's exchange", watched, after);
  if (!ok) {
    std::fprintf(stderr, "ddprun_round_sim: not every joiner got the completed round\n");
    return 1;
  }
  // Requests are counted by ddprun's server only (null over etcd).
  auto per_node = [&](uint64_t n) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.2f", static_cast<double>(n) / nodes);
    return meet.etcd.empty() ? std::string(text) : std::string("null");
  };
  std::printf(
      "{\"nodes\": %d, \"seconds\": %.3f, \"requests_per_node\": %s, \"restart_seconds\": %.3f, "
      "\"restart_requests_per_node\": %s, \"watch_seconds\": %.3f, "
      "\"watch_requests_per_node\": %s, \"hang_seconds\": %.3f, \"hang_requests_per_node\": %s, "
      "\"floor_seconds\": %.3f, \"cpu_seconds\": %.2f}\n",
      nodes, join_seconds, per_node(total(joined) - total(before)).c_str(), restart_seconds,
      per_node(total(restarted) - total(joined)).c_str(), watch_seconds,
      per_node(total(watched) - total(restarted)).c_str(), hang_seconds,
      per_node(total(after) - total(watched)).c_str(), floor_seconds, cpu_used);
  return 0;
}
