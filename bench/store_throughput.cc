#include "bench/store_throughput.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <sstream>
#include <string_view>
#include <thread>

#include "bench/store_bench_servers.h"
#include "net/socket.h"
#include "store/tcpstore/tcp_store_client.h"

namespace ddprun::bench {
namespace {

using Clock = std::chrono::steady_clock;

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

std::string wire_str(const std::string& s) {
  uint64_t n = s.size();
  return std::string(reinterpret_cast<const char*>(&n), 8) + s;
}

}  // namespace

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

}  // namespace ddprun::bench
