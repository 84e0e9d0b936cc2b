// Store throughput and connection handling: ddprun's TCPStore server next to torch
// 1.13's own, measured in the same run with the same client (ddprun's C++ client in
// the 1.13 numbering, which both servers speak). Each server runs on core 0 and the
// client drivers on core 1, so what is measured is the server. The job start also runs
// against torch 2.14's server (the 2.x numbering; Debian builds it without libuv), where
// the forky root is made (scripts/torch_root.sh forky; tests/torch2/in_root.sh runs it).
//
//   ddprun_store_bench [--seconds S] [--python /usr/bin/python3] [--no-torch]
//                      [--connections N] [--barrier 1024,4096,16384,65536,100000]
//                      [--withdrawn 1024,4096,16384]
//                      [--torch2-root /var/cache/ddprun/torch-roots/forky]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "net/socket.h"
#include "store/tcpstore/tcp_store_client.h"
#include "store/tcpstore/tcp_store_server.h"

using namespace ddprun;
using Clock = std::chrono::steady_clock;

namespace {

// Server on core 0, client drivers on core 1 (when there are two): on a 2-core
// machine the client would otherwise compete with the server it measures.
void pin_to_cpu(int cpu) {
  int n = static_cast<int>(std::thread::hardware_concurrency());
  if (n < 2) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu % n, &set);
  ::sched_setaffinity(0, sizeof(set), &set);
}

store::TcpStoreClient::Options client_options(
    store::tcpstore::Numbering numbering = store::tcpstore::Numbering::kV113) {
  store::TcpStoreClient::Options o;
  o.timeout = std::chrono::seconds(60);
  o.numbering = numbering;
  return o;
}

// A store server in a child process (torch's through Python, or ddprun's own for the
// held-connections case); its port comes on the child's stdout, and closing its
// stdin ends it.
class ServerProcess {
 public:
  explicit ServerProcess(std::vector<std::string> argv) {
    int out[2];
    int in[2];
    if (::pipe(out) != 0 || ::pipe(in) != 0) throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ == 0) {
      pin_to_cpu(0);  // the server's core; its threads inherit it
      ::dup2(out[1], 1);
      ::dup2(in[0], 0);
      ::close(out[0]);
      ::close(in[1]);
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::close(out[1]);
    ::close(in[0]);
    stdin_ = in[1];
    // Read up to the newline; keep the pipe open so the child never writes to a
    // closed pipe.
    stdout_ = out[0];
    std::string line;
    char c;
    while (::read(stdout_, &c, 1) == 1 && c != '\n') line += c;
    port_ = std::atoi(line.c_str());
    if (port_ == 0) throw std::runtime_error(argv[0] + " did not start a store server");
  }
  ~ServerProcess() {
    ::close(stdin_);
    ::close(stdout_);
    int status;
    ::waitpid(pid_, &status, 0);
  }
  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
  int stdout_ = -1;
  int port_ = 0;
};

// Busy and total jiffies of core 0 (the servers' core), from /proc/stat.
std::pair<uint64_t, uint64_t> core0_jiffies() {
  std::ifstream in("/proc/stat");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("cpu0 ", 0) != 0) continue;
    std::istringstream f(line.substr(5));
    uint64_t v[8] = {};
    for (auto& x : v) f >> x;
    uint64_t idle = v[3] + v[4];
    uint64_t total = 0;
    for (auto x : v) total += x;
    return {total - idle, total};
  }
  return {0, 0};
}

struct Measurement {
  double ops_per_second = 0;
  double server_us_per_op = 0;  // busy time of the server's core per operation
};

// One request kind: its bytes (1.13 numbering, so both servers understand it) and
// the size of its reply.
struct OpKind {
  const char* name;
  std::string request;
  size_t reply_size;
};

std::string wire_str(const std::string& s) {
  uint64_t n = s.size();
  return std::string(reinterpret_cast<const char*>(&n), 8) + s;
}

std::vector<OpKind> op_kinds() {
  namespace ts = store::tcpstore;
  auto code = [](ts::Op op) {
    return std::string(1, static_cast<char>(*ts::op_to_wire(ts::Numbering::kV113, op)));
  };
  std::string key = wire_str("bench/key");
  std::string value = wire_str(std::string(64, 'v'));
  std::string one_key = std::string("\x01\0\0\0\0\0\0\0", 8) + key;
  int64_t delta = 1;
  std::string getnumkeys = code(ts::Op::kGetNumKeys);
  auto request = [&](ts::Op op, std::initializer_list<std::string_view> parts) {
    std::string r = code(op);
    for (auto part : parts) r += part;
    return r;
  };
  return {
      // SET has no reply: a GETNUMKEYS round trip after it paces the client.
      {"set (+ a round trip)", request(ts::Op::kSet, {key, value, getnumkeys}), 8},
      {"get", request(ts::Op::kGet, {key}), 8 + 64},
      {"add",
       request(ts::Op::kAdd, {wire_str("bench/counter"),
                              std::string_view(reinterpret_cast<const char*>(&delta), 8)}),
       8},
      {"wait", request(ts::Op::kWait, {one_key}), 1},
  };
}

// Operations per second from `clients` connections driven by one thread on the
// client core. Each connection sends `depth` requests at once and then reads their
// replies: with depth 1 this is exactly a synchronous client; a larger depth makes
// the client cheap enough that the server, not the client, sets the pace.
Measurement throughput(int port, int clients, const OpKind& op, double seconds, int depth) {
  int drivers = 1;
  auto deadline = [] { return Clock::now() + std::chrono::seconds(30); };
  std::vector<std::vector<ddprun::net::Socket>> conns(drivers);
  for (int c = 0; c < clients; ++c) {
    conns[c % drivers].push_back(ddprun::net::Socket::connect("127.0.0.1", port, deadline()));
  }
  {  // the key every op reads
    store::TcpStoreClient setup("127.0.0.1", port, client_options());
    setup.set("bench/key", std::string(64, 'v'));
  }
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> total{0};
  std::vector<std::thread> threads;
  std::string burst;
  for (int i = 0; i < depth; ++i) burst += op.request;
  auto [busy0, total0] = core0_jiffies();
  auto start = Clock::now();
  for (int d = 0; d < drivers; ++d) {
    threads.emplace_back([&, d] {
      std::string buf(op.reply_size * depth, '\0');
      uint64_t n = 0;
      while (!stop) {
        for (auto& s : conns[d]) s.send_all(burst.data(), burst.size(), deadline());
        for (auto& s : conns[d]) s.recv_exact(buf.data(), buf.size(), deadline());
        n += conns[d].size() * depth;
      }
      total += n;
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  auto [busy1, total1] = core0_jiffies();
  double busy_fraction =
      total1 > total0 ? static_cast<double>(busy1 - busy0) / static_cast<double>(total1 - total0)
                      : 0;
  Measurement m;
  m.ops_per_second = static_cast<double>(total) / elapsed;
  m.server_us_per_op = total ? busy_fraction * elapsed * 1e6 / static_cast<double>(total) : 0;
  return m;
}

// Opens `n` connections from 8 threads, each answering one ADD; returns
// {connections per second, every answer correct}. Connections stay open until the end.
std::pair<double, bool> connections(int port, int n) {
  std::vector<std::unique_ptr<store::TcpStoreClient>> held(n);
  std::vector<int64_t> answers(n, -1);
  std::string key = "conn/" + std::to_string(Clock::now().time_since_epoch().count());
  auto start = Clock::now();
  std::vector<std::thread> threads;
  std::atomic<bool> failed{false};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < n && !failed; i += 8) {
        try {
          held[i] = std::make_unique<store::TcpStoreClient>("127.0.0.1", port, client_options());
          answers[i] = held[i]->add(key, 1);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "connection %d: %s\n", i, e.what());
          failed = true;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::sort(answers.begin(), answers.end());
  bool correct = !failed;
  for (int i = 0; i < n && correct; ++i) correct = answers[i] == i + 1;
  return {n / elapsed, correct};
}

// Workers' connections come from this many loopback addresses (127.0.0.1, .2, ...):
// each has its own ephemeral ports (about 28,000 here), and with one address the
// kernel's search for a free port grows with the ports in use (and in TIME_WAIT from
// the sizes before), which the server would be blamed for.
constexpr int kSourceAddresses = 16;
// torch 1.13's server took 15 s for a job start of 16,384 workers: larger ones are ddprun's alone.
constexpr int kLargestTorchStart = 16384;
// torch 2.14's server took 0.55–0.68 ms per withdrawn wait with 4,096 workers polling one
// key (11–14 times ddprun's, 3 times its own at 1,024); 16,384 did not finish in 6 minutes.
constexpr int kLargestTorchPoll = 4096;

// Worker `i`'s connection to the store at 127.0.0.1:`port`, from the loopback
// address 127.0.0.<1 + i % kSourceAddresses>, the port picked by the kernel at connect.
std::unique_ptr<store::TcpStoreClient> worker_client(int port, int i,
                                                     store::tcpstore::Numbering numbering) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  auto sock = ddprun::net::Socket::adopt(fd, "127.0.0.1:" + std::to_string(port));
  int one = 1;
  ::setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_in from{};
  from.sin_family = AF_INET;
  from.sin_addr.s_addr = htonl(INADDR_LOOPBACK + static_cast<uint32_t>(i % kSourceAddresses));
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
    throw std::runtime_error(std::string("connect: ") + std::strerror(errno));
  }
  auto client = std::make_unique<store::TcpStoreClient>("127.0.0.1", port,
                                                        client_options(numbering), std::move(sock));
  while (client->handshake_step() >= 0) {
  }
  return client;
}

// torch 2.14's server looks up the name of each peer: from 127.0.0.2 on, each lookup
// would wait 5 s for a name server this machine cannot reach (torch 1.13's does not
// look). A hosts file of its own names every source address, as a cluster's DNS would
// answer at once (tests/torch2/in_root.sh binds it over the root's /etc/hosts).
// Returns its path, for the caller to remove.
std::string torch2_hosts() {
  std::string path = "/tmp/ddprun_bench_hosts." + std::to_string(::getpid());
  std::ofstream hosts(path);
  hosts << "127.0.0.1 localhost\n";
  for (int a = 2; a <= kSourceAddresses; ++a) {
    hosts << "127.0.0." << a << " ddprun-bench-source-" << a << "\n";
  }
  ::setenv("DDPRUN_ROOT_HOSTS", path.c_str(), 1);
  return path;
}

// A PyTorch-style job start against the server at `port`: `n` workers connect, each
// sets its key and ADDs the barrier's counter; the one that brings it to `n` sets the
// barrier's key, for which every worker WAITs. Returns the seconds from the first
// connection to the last worker through the barrier (0 when something failed).
// Connections are made by 8 threads; every WAIT is sent before any answer is read.
double barrier_start(int port, int n,
                     store::tcpstore::Numbering numbering = store::tcpstore::Numbering::kV113) {
  std::string run = std::to_string(Clock::now().time_since_epoch().count());
  std::vector<std::unique_ptr<store::TcpStoreClient>> workers(n);
  std::atomic<bool> failed{false};
  auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < n && !failed; i += 8) {
        try {
          auto w = worker_client(port, i, numbering);
          w->set(run + "/rank/" + std::to_string(i), "ready");
          if (w->add(run + "/count", 1) == n) w->set(run + "/done", "1");
          w->start_wait({run + "/done"});
          workers[i] = std::move(w);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "worker %d: %s\n", i, e.what());
          failed = true;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  if (failed) return 0;
  try {
    for (auto& w : workers) w->finish_wait();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "barrier: %s\n", e.what());
    return 0;
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The growth exponent k of cost ~ N^k from the size before ("-" for the first size or
// a failed run), cut to 4 characters.
std::string growth_from(double before, int before_n, double cost, int n) {
  if (before <= 0 || cost <= 0 || n == before_n) return "-";
  std::string k =
      std::to_string(std::log(cost / before) / std::log(static_cast<double>(n) / before_n));
  k.resize(std::min<size_t>(k.size(), 4));
  return k;
}

// torch 2.14's own server, run in the forky root at `root`.
std::vector<std::string> torch2_server(const std::string& root) {
  return {std::string(DDPRUN_BENCH_DIR) + "/../tests/torch2/in_root.sh", root, "python3",
          std::string(DDPRUN_BENCH_DIR) + "/torch_store_server.py"};
}

// Workers polling one key, as torch 2.x's clients wait (WAIT, then CANCEL_WAIT once
// their timeout passes): `n` connections (2.x numbering) wait on one absent key, then
// each in turn withdraws its wait and waits again, 3 times over. Returns the seconds
// per withdrawal, its round trip included (0 when something failed).
double withdrawn_waits(int port, int n) {
  constexpr int kRounds = 3;
  std::string key = "absent/" + std::to_string(Clock::now().time_since_epoch().count());
  std::vector<std::unique_ptr<store::TcpStoreClient>> workers;
  try {
    for (int i = 0; i < n; ++i) {
      workers.push_back(worker_client(port, i, store::tcpstore::Numbering::kV2));
      workers.back()->start_wait({key});
    }
    auto start = Clock::now();
    for (int r = 0; r < kRounds; ++r) {
      for (auto& w : workers) {
        if (w->cancel_wait()) throw std::runtime_error("woken by a key nobody set");
        w->start_wait({key});
      }
    }
    return std::chrono::duration<double>(Clock::now() - start).count() / (kRounds * n);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "withdrawn waits: %s\n", e.what());
    return 0;
  }
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 1.0;
  std::string python = "/usr/bin/python3";
  bool with_torch = true;
  const char* roots = std::getenv("DDPRUN_TORCH_ROOTS");
  std::string torch2_root =
      std::string(roots ? roots : "/var/cache/ddprun/torch-roots") + "/forky";
  int held = 10000;
  // Sizes past what the descriptor limit allows are left out, said on stderr.
  std::vector<int> barrier_sizes = {1024, 4096, 16384, 65536, 100000};
  std::vector<int> withdrawn_sizes = {1024, 4096, 16384};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--seconds" && i + 1 < argc)
      seconds = std::atof(argv[++i]);
    else if (a == "--python" && i + 1 < argc)
      python = argv[++i];
    else if (a == "--connections" && i + 1 < argc)
      held = std::atoi(argv[++i]);
    else if (a == "--no-torch")
      with_torch = false;
    else if (a == "--torch2-root" && i + 1 < argc)
      torch2_root = argv[++i];
    else if ((a == "--barrier" || a == "--withdrawn") && i + 1 < argc) {
      auto& sizes = a == "--barrier" ? barrier_sizes : withdrawn_sizes;
      sizes.clear();
      std::istringstream list(argv[++i]);
      for (std::string n; std::getline(list, n, ',');) sizes.push_back(std::stoi(n));
    }
  }
  // The held connections' clients share this process with our server: two descriptors
  // each (10,000 held: 20,000+); a job start's workers one each (100,000: 101,000+).
  // Root may raise the hard limit; otherwise use what there is.
  int most = 2 * held;
  for (int n : barrier_sizes) most = std::max(most, n);
  for (int n : withdrawn_sizes) most = std::max(most, n);
  rlimit lim{};
  ::getrlimit(RLIMIT_NOFILE, &lim);
  rlim_t need = std::max<rlim_t>(65536, static_cast<rlim_t>(most) + 1024);
  rlimit wanted{need, std::max<rlim_t>(lim.rlim_max, need)};
  if (::setrlimit(RLIMIT_NOFILE, &wanted) != 0) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
  ::getrlimit(RLIMIT_NOFILE, &lim);
  // A job start's server is a process of its own (with this limit too); each worker
  // holds one descriptor here.
  size_t fits = lim.rlim_cur > 1024 ? lim.rlim_cur - 1024 : 0;
  std::vector<int> too_large;
  for (auto* sizes : {&barrier_sizes, &withdrawn_sizes}) {
    std::erase_if(*sizes, [&](int n) {
      if (static_cast<size_t>(n) <= fits) return false;
      too_large.push_back(n);
      return true;
    });
  }
  for (int n : too_large) {
    std::fprintf(stderr,
                 "ddprun_store_bench: a size of %d workers is left out: this process may "
                 "hold %llu descriptors, it would need %d (raise the hard limit as root)\n",
                 n, static_cast<unsigned long long>(lim.rlim_cur), n + 1024);
  }

  // The server's thread inherits this affinity; then the rest moves to core 1.
  pin_to_cpu(0);
  store::TcpStoreServer ours("127.0.0.1", 0);
  std::unique_ptr<ServerProcess> torch;
  if (with_torch) {
    torch = std::make_unique<ServerProcess>(
        std::vector<std::string>{python, std::string(DDPRUN_BENCH_DIR) + "/torch_store_server.py"});
  }
  pin_to_cpu(1);
  std::printf(
      "| op | clients | in flight each | ddprun ops/s | torch 1.13 ops/s | ddprun / torch "
      "| server core µs/op: ddprun / torch |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (int clients : {1, 16, 256}) {
    for (int depth : {1, 16}) {
      for (const auto& op : op_kinds()) {
        Measurement a = throughput(ours.port(), clients, op, seconds, depth);
        if (torch) {
          Measurement b = throughput(torch->port(), clients, op, seconds, depth);
          std::printf("| %s | %d | %d | %.0f | %.0f | x%.1f | %.2f / %.2f |\n", op.name, clients,
                      depth, a.ops_per_second, b.ops_per_second,
                      a.ops_per_second / b.ops_per_second, a.server_us_per_op, b.server_us_per_op);
        } else {
          std::printf("| %s | %d | %d | %.0f | - | - | %.2f / - |\n", op.name, clients, depth,
                      a.ops_per_second, a.server_us_per_op);
        }
        std::fflush(stdout);
      }
    }
  }
  std::printf("\n| connections | server | accepted/s | all answers correct |\n|---|---|---|---|\n");
  // Both servers in their own process here, so the clients' descriptors and the
  // server's do not share one limit.
  ServerProcess ours_apart({DDPRUN_STORE_SERVER});
  auto [rate, ok] = connections(ours_apart.port(), held);
  std::printf("| %d held | ddprun | %.0f | %s |\n", held, rate, ok ? "yes" : "NO");
  std::fflush(stdout);
  if (torch) {
    auto [trate, tok] = connections(torch->port(), held);
    std::printf("| %d held | torch 1.13 | %.0f | %s |\n", held, trate, tok ? "yes" : "NO");
  }
  // A fresh server each: the held connections above are gone with theirs. The growth
  // exponent k of time ~ N^k from the size before (1 is linear).
  bool with_torch2 = with_torch && std::ifstream(torch2_root + "/.ddprun-root-ready").good();
  if (with_torch && !with_torch2) {
    std::fprintf(stderr, "ddprun_store_bench: no torch 2.14: %s is not made "
                 "(scripts/torch_root.sh forky makes it)\n", torch2_root.c_str());
  }
  std::printf("\n| workers through a barrier (connect, set, add, wait) | ddprun | growth from the "
              "size before | torch 1.13 | torch 1.13 / ddprun | torch 2.14 | torch 2.14 / ddprun "
              "|\n|---|---|---|---|---|---|---|\n");
  std::string hosts = with_torch2 ? torch2_hosts() : "";
  auto torch_cell = [](double t, double ours) {
    char text[64];
    if (t <= 0) return std::string("- | -");
    std::snprintf(text, sizeof(text), "%.0f ms | x%.1f", t * 1e3, t / ours);
    return std::string(text);
  };
  double before = 0;
  int before_n = 0;
  for (int n : barrier_sizes) {
    ServerProcess fresh({DDPRUN_STORE_SERVER});
    double a = barrier_start(fresh.port(), n);
    double b = 0, c = 0;
    if (with_torch && n <= kLargestTorchStart) {
      ServerProcess torch_fresh({python, std::string(DDPRUN_BENCH_DIR) + "/torch_store_server.py"});
      b = barrier_start(torch_fresh.port(), n);
    }
    if (with_torch2 && n <= kLargestTorchStart) {
      ServerProcess torch2(torch2_server(torch2_root));
      c = barrier_start(torch2.port(), n, store::tcpstore::Numbering::kV2);
    }
    ok = ok && a > 0;
    std::string growth = growth_from(before, before_n, a, n);
    before = a;
    before_n = n;
    std::printf("| %d | %.0f ms | %s | %s | %s |\n", n, a * 1e3, growth.c_str(),
                torch_cell(b, a).c_str(), torch_cell(c, a).c_str());
    std::fflush(stdout);
  }
  // torch 1.13 cannot withdraw a wait (it has no CANCEL_WAIT): 2.14 alone beside ddprun.
  std::printf(
      "\n| workers polling one key (wait, then cancel and wait again) | ddprun: "
      "per cancel | growth from the size before | torch 2.14 | torch 2.14 / ddprun "
      "|\n|---|---|---|---|---|\n");
  before = 0;
  before_n = 0;
  for (int n : withdrawn_sizes) {
    ServerProcess fresh({DDPRUN_STORE_SERVER});
    double a = withdrawn_waits(fresh.port(), n);
    double c = 0;
    if (with_torch2 && n <= kLargestTorchPoll) {
      ServerProcess torch2(torch2_server(torch2_root));
      c = withdrawn_waits(torch2.port(), n);
    }
    ok = ok && a > 0;
    std::string growth = growth_from(before, before_n, a, n);  // per cancel: 0 is linear
    before = a;
    before_n = n;
    char torch_text[64] = "- | -";
    if (c > 0) std::snprintf(torch_text, sizeof(torch_text), "%.1f µs | x%.1f", c * 1e6, c / a);
    std::printf("| %d | %.1f µs | %s | %s |\n", n, a * 1e6, growth.c_str(), torch_text);
    std::fflush(stdout);
  }
  if (!hosts.empty()) ::unlink(hosts.c_str());
  return ok ? 0 : 1;
}
