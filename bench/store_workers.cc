#include "bench/store_workers.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "bench/store_bench_servers.h"
#include "net/socket.h"

namespace ddprun::bench {

using Clock = std::chrono::steady_clock;

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

double barrier_start(int port, int n, store::tcpstore::Numbering numbering) {
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

}  // namespace ddprun::bench
