// Store throughput and connection handling: ddprun's TCPStore server next to torch
// 1.13's own, measured in the same run with the same client (ddprun's C++ client in
// the 1.13 numbering, which both servers speak). Each server runs on core 0 and the
// client drivers on core 1, so what is measured is the server. The job start also runs
// against torch 2.14's server (the 2.x numbering; Debian builds it without libuv), where
// the forky root is made (scripts/torch_root.sh forky; tests/torch2/in_root.sh runs it).
// The tables, in order: store_throughput.h's two, then store_workers.h's two.
//
//   ddprun_store_bench [--seconds S] [--python /usr/bin/python3] [--no-torch]
//                      [--connections N] [--barrier 1024,4096,16384,65536,100000]
//                      [--withdrawn 1024,4096,16384]
//                      [--torch2-root /var/cache/ddprun/torch-roots/forky]
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/store_bench_servers.h"
#include "bench/store_throughput.h"
#include "bench/store_workers.h"
#include "store/tcpstore/tcp_store_server.h"

using namespace ddprun;
using namespace ddprun::bench;

namespace {

// torch 1.13's server took 15 s for a job start of 16,384 workers: larger ones are ddprun's alone.
constexpr int kLargestTorchStart = 16384;
// torch 2.14's server took 0.55–0.68 ms per withdrawn wait with 4,096 workers polling one
// key (11–14 times ddprun's, 3 times its own at 1,024); 16,384 did not finish in 6 minutes.
constexpr int kLargestTorchPoll = 4096;

struct Options {
  double seconds = 1.0;
  std::string python = "/usr/bin/python3";
  bool with_torch = true;
  std::string torch2_root;
  int held = 10000;
  // Sizes past what the descriptor limit allows are left out, said on stderr.
  std::vector<int> barrier_sizes = {1024, 4096, 16384, 65536, 100000};
  std::vector<int> withdrawn_sizes = {1024, 4096, 16384};
};

Options parse(int argc, char** argv) {
  Options o;
  const char* roots = std::getenv("DDPRUN_TORCH_ROOTS");
  o.torch2_root = std::string(roots ? roots : "/var/cache/ddprun/torch-roots") + "/forky";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--seconds" && i + 1 < argc)
      o.seconds = std::atof(argv[++i]);
    else if (a == "--python" && i + 1 < argc)
      o.python = argv[++i];
    else if (a == "--connections" && i + 1 < argc)
      o.held = std::atoi(argv[++i]);
    else if (a == "--no-torch")
      o.with_torch = false;
    else if (a == "--torch2-root" && i + 1 < argc)
      o.torch2_root = argv[++i];
    else if ((a == "--barrier" || a == "--withdrawn") && i + 1 < argc) {
      auto& sizes = a == "--barrier" ? o.barrier_sizes : o.withdrawn_sizes;
      sizes.clear();
      std::istringstream list(argv[++i]);
      for (std::string n; std::getline(list, n, ',');) sizes.push_back(std::stoi(n));
    }
  }
  return o;
}

// The held connections' clients share this process with our server: two descriptors
// each (10,000 held: 20,000+); a job start's workers one each (100,000: 101,000+).
// Root may raise the hard limit; otherwise use what there is. A job start's server is
// a process of its own (with this limit too); each worker holds one descriptor here,
// so the sizes past the limit are left out, said on stderr.
void fit_descriptor_limit(Options& o) {
  int most = 2 * o.held;
  for (int n : o.barrier_sizes) most = std::max(most, n);
  for (int n : o.withdrawn_sizes) most = std::max(most, n);
  rlimit lim{};
  ::getrlimit(RLIMIT_NOFILE, &lim);
  rlim_t need = std::max<rlim_t>(65536, static_cast<rlim_t>(most) + 1024);
  rlimit wanted{need, std::max<rlim_t>(lim.rlim_max, need)};
  if (::setrlimit(RLIMIT_NOFILE, &wanted) != 0) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
  ::getrlimit(RLIMIT_NOFILE, &lim);
  size_t fits = lim.rlim_cur > 1024 ? lim.rlim_cur - 1024 : 0;
  std::vector<int> too_large;
  for (auto* sizes : {&o.barrier_sizes, &o.withdrawn_sizes}) {
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
}

// The growth exponent k of cost ~ N^k from the size before, size by size: "-" for the
// first size or after a failed run, cut to 4 characters.
class Growth {
 public:
  std::string next(double cost, int n) {
    std::string k = "-";
    if (before_ > 0 && cost > 0 && n != before_n_) {
      k = std::to_string(std::log(cost / before_) / std::log(static_cast<double>(n) / before_n_));
      k.resize(std::min<size_t>(k.size(), 4));
    }
    before_ = cost;
    before_n_ = n;
    return k;
  }

 private:
  double before_ = 0;
  int before_n_ = 0;
};

void throughput_table(int ours, const ServerProcess* torch, double seconds) {
  std::printf(
      "| op | clients | in flight each | ddprun ops/s | torch 1.13 ops/s | ddprun / torch "
      "| server core µs/op: ddprun / torch |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (int clients : {1, 16, 256}) {
    for (int depth : {1, 16}) {
      for (const auto& op : op_kinds()) {
        Measurement a = throughput(ours, clients, op, seconds, depth);
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
}

// Both servers in their own process here, so the clients' descriptors and the
// server's do not share one limit. Returns whether ddprun's answered every one right.
bool connections_table(const ServerProcess* torch, int held) {
  std::printf("\n| connections | server | accepted/s | all answers correct |\n|---|---|---|---|\n");
  ServerProcess ours({DDPRUN_STORE_SERVER});
  auto [rate, ok] = connections(ours.port(), held);
  std::printf("| %d held | ddprun | %.0f | %s |\n", held, rate, ok ? "yes" : "NO");
  std::fflush(stdout);
  if (torch) {
    auto [trate, tok] = connections(torch->port(), held);
    std::printf("| %d held | torch 1.13 | %.0f | %s |\n", held, trate, tok ? "yes" : "NO");
  }
  return ok;
}

// A fresh server each size: the connections of the size before are gone with theirs.
// The growth exponent k of time ~ N^k from the size before (1 is linear). Returns
// whether ddprun's server took every size through.
bool barrier_table(const Options& o, bool with_torch2) {
  std::printf(
      "\n| workers through a barrier (connect, set, add, wait) | ddprun | growth from the "
      "size before | torch 1.13 | torch 1.13 / ddprun | torch 2.14 | torch 2.14 / ddprun "
      "|\n|---|---|---|---|---|---|---|\n");
  auto torch_cell = [](double t, double ours) {
    char text[64];
    if (t <= 0) return std::string("- | -");
    std::snprintf(text, sizeof(text), "%.0f ms | x%.1f", t * 1e3, t / ours);
    return std::string(text);
  };
  bool ok = true;
  Growth growth;
  for (int n : o.barrier_sizes) {
    ServerProcess fresh({DDPRUN_STORE_SERVER});
    double a = barrier_start(fresh.port(), n);
    double b = 0, c = 0;
    if (o.with_torch && n <= kLargestTorchStart) {
      ServerProcess torch(torch1_server(o.python));
      b = barrier_start(torch.port(), n);
    }
    if (with_torch2 && n <= kLargestTorchStart) {
      ServerProcess torch2(torch2_server(o.torch2_root));
      c = barrier_start(torch2.port(), n, store::tcpstore::Numbering::kV2);
    }
    ok = ok && a > 0;
    std::printf("| %d | %.0f ms | %s | %s | %s |\n", n, a * 1e3, growth.next(a, n).c_str(),
                torch_cell(b, a).c_str(), torch_cell(c, a).c_str());
    std::fflush(stdout);
  }
  return ok;
}

// torch 1.13 cannot withdraw a wait (it has no CANCEL_WAIT): 2.14 alone beside ddprun.
// Returns whether ddprun's server took every size through.
bool polling_table(const Options& o, bool with_torch2) {
  std::printf(
      "\n| workers polling one key (wait, then cancel and wait again) | ddprun: "
      "per cancel | growth from the size before | torch 2.14 | torch 2.14 / ddprun "
      "|\n|---|---|---|---|---|\n");
  bool ok = true;
  Growth growth;
  for (int n : o.withdrawn_sizes) {
    ServerProcess fresh({DDPRUN_STORE_SERVER});
    double a = withdrawn_waits(fresh.port(), n);
    double c = 0;
    if (with_torch2 && n <= kLargestTorchPoll) {
      ServerProcess torch2(torch2_server(o.torch2_root));
      c = withdrawn_waits(torch2.port(), n);
    }
    ok = ok && a > 0;
    char torch_text[64] = "- | -";
    if (c > 0) std::snprintf(torch_text, sizeof(torch_text), "%.1f µs | x%.1f", c * 1e6, c / a);
    // per cancel: 0 is linear
    std::printf("| %d | %.1f µs | %s | %s |\n", n, a * 1e6, growth.next(a, n).c_str(), torch_text);
    std::fflush(stdout);
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  fit_descriptor_limit(o);

  // The server's thread inherits this affinity; then the rest moves to core 1.
  pin_to_cpu(0);
  store::TcpStoreServer ours("127.0.0.1", 0);
  std::unique_ptr<ServerProcess> torch;
  if (o.with_torch) torch = std::make_unique<ServerProcess>(torch1_server(o.python));
  pin_to_cpu(1);
  throughput_table(ours.port(), torch.get(), o.seconds);
  bool ok = connections_table(torch.get(), o.held);

  bool with_torch2 = o.with_torch && std::ifstream(o.torch2_root + "/.ddprun-root-ready").good();
  if (o.with_torch && !with_torch2) {
    std::fprintf(stderr,
                 "ddprun_store_bench: no torch 2.14: %s is not made "
                 "(scripts/torch_root.sh forky makes it)\n",
                 o.torch2_root.c_str());
  }
  std::string hosts = with_torch2 ? torch2_hosts() : "";
  ok = barrier_table(o, with_torch2) && ok;
  ok = polling_table(o, with_torch2) && ok;
  if (!hosts.empty()) ::unlink(hosts.c_str());
  return ok ? 0 : 1;
}
