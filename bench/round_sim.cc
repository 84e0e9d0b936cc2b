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
// left out, and the CPU of this process alone in each phase (`store_cpu_seconds`): the store's
// own work, what a store host spends where the nodes are other machines (c10d). `--start-on-stdin`:
// once every joiner is connected, says `connected` on stderr and starts the phases on a line on
// stdin (so that a caller can read a store's own counters at the phases' start); and once every
// node's wait for the restart is sent, says `armed` and starts the restart on a second line (so
// that a caller can wait until etcd watches for each, as it does for agents whose workers ran a
// while: else the restart's time holds their waits' reads and watches, and etcd's catching up of
// watches begun before the failure's write).
// `--floor-waves=K`: the floor's nodes send in K waves, one after the other, each
// process its share of each (N/K nodes' requests in flight at once, not N).
// Last, a hang's exchange: every node shares a report (kHangPartBytes); group rank 0 waits
// for every report, reads them and shares a verdict, which each other node waits for and
// reads (what agents do); `--hang=all` has every node wait for and read every report
// instead (how agents exchanged reports before).
//
//   ddprun_round_sim --nodes=N [--processes=P] [--watch=ring|all] [--etcd=HOST:PORT]
//                    [--start-on-stdin] [--floor-waves=K] [--hang=judged|all]
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "bench/round_sim_joiners.h"
#include "os/proc_stat.h"
#include "store/tcpstore/tcp_store_server.h"

using namespace ddprun;
using bench::Meeting;

namespace {

// The CPU seconds this process (the store's thread; the main thread waits on pipes) has
// used so far, to the nanosecond.
double own_cpu_seconds() {
  timespec t{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// The CPU seconds process `pid` has used so far (user and system).
double cpu_seconds(pid_t pid) {
  os::ProcStat st;
  if (!os::read_proc_stat(pid, st)) return 0;
  return static_cast<double>(st.utime + st.stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
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
      ::_exit(bench::run_joiners(meet, first, count, nodes, watch_all, hang_all, floor_waves,
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
  // Each phase: "go" to every process, then each says when its joiners are through;
  // `store_cpu`: this process's CPU meanwhile.
  auto phase = [&](double& store_cpu) {
    double cpu_at_start = own_cpu_seconds();
    auto start = std::chrono::steady_clock::now();
    for (int fd : go_pipes) {
      if (::write(fd, "g", 1) != 1) return -1.0;
    }
    for (int fd : ready_pipes) {
      char byte = 0;
      if (::read(fd, &byte, 1) != 1 || byte != 'r') return -1.0;
    }
    auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start);
    store_cpu = own_cpu_seconds() - cpu_at_start;
    return seconds.count();
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
  double floor_cpu = 0, join_cpu = 0, armed_cpu = 0, restart_cpu = 0, watch_cpu = 0, hang_cpu = 0;
  double floor_seconds = phase(floor_cpu);
  Counts before = server.request_counts();
  double join_seconds = phase(join_cpu);
  Counts joined = server.request_counts();
  bool armed = phase(armed_cpu) >= 0;  // every node's wait to be told sent (its requests counted
                                       // with the restart's)
  if (armed && start_on_stdin) {  // the caller sees them armed (etcd watching for each)
    std::fprintf(stderr, "armed\n");
    std::fflush(stderr);
    char line[16];
    if (!std::fgets(line, sizeof(line), stdin)) return 2;
  }
  double restart_seconds = armed ? phase(restart_cpu) : -1;
  Counts restarted = server.request_counts();
  double watch_seconds = phase(watch_cpu);
  Counts watched = server.request_counts();
  // Up to here, as before the hang's phase came: each child is through; none waited for.
  double cpu_used = cpu() - cpu_before;
  double hang_seconds = phase(hang_cpu);
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
  // The store's CPU in each phase, where it is this process's (null over etcd).
  auto store_cpu_json = [&] {
    if (!meet.etcd.empty()) return std::string("null");
    char text[160];
    std::snprintf(text, sizeof(text),
                  "{\"floor\": %.4f, \"round\": %.4f, \"restart\": %.4f, \"watch\": %.4f, "
                  "\"hang\": %.4f}",
                  floor_cpu, join_cpu, restart_cpu, watch_cpu, hang_cpu);
    return std::string(text);
  };
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
      "\"floor_seconds\": %.3f, \"cpu_seconds\": %.2f, \"store_cpu_seconds\": %s}\n",
      nodes, join_seconds, per_node(total(joined) - total(before)).c_str(), restart_seconds,
      per_node(total(restarted) - total(joined)).c_str(), watch_seconds,
      per_node(total(watched) - total(restarted)).c_str(), hang_seconds,
      per_node(total(after) - total(watched)).c_str(), floor_seconds, cpu_used,
      store_cpu_json().c_str());
  return 0;
}
