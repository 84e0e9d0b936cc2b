#include "agent/preflight/link_probe.h"

#include <algorithm>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "store/tcpstore/store_connect.h"
#include "store/tcpstore/store_on_loop.h"

namespace ddprun::agent {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr int kRoundTrips = 7;
constexpr size_t kFirstChunk = 64 * 1024;
constexpr size_t kLastChunk = 4 * 1024 * 1024;
constexpr double kQuickStep = 0.02;  // seconds
constexpr std::chrono::seconds kCallTimeout{5};

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double fastest(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::min_element(v.begin(), v.end());
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

std::string LinkFigures::to_json() const {
  json j{{"rtt_ms", rtt_ms}, {"up_mbps", up_mbps}, {"down_mbps", down_mbps}};
  if (!error.empty()) j["error"] = error;
  return j.dump();
}

LinkFigures LinkFigures::from_json(const std::string& text) {
  LinkFigures f;
  auto j = json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("rtt_ms")) {
    f.error = "no figures";
    return f;
  }
  auto number = [&](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
  };
  f.rtt_ms = number("rtt_ms");
  f.up_mbps = number("up_mbps");
  f.down_mbps = number("down_mbps");
  if (auto it = j.find("error"); it != j.end() && it->is_string()) f.error = it->get<std::string>();
  return f;
}

Task<LinkFigures> probe_link(std::string host, int port, std::chrono::milliseconds budget,
                             CancelSignal& cancel) {
  LinkFigures f;
  try {
    store::TcpStoreClient::Options o;
    o.timeout = budget;
    auto client = co_await store::open_store_client(host, port, o, Clock::now() + budget, cancel);
    client->set_timeout(kCallTimeout);  // a slow link gives slow figures, not an error
    std::vector<double> trips;
    for (uint32_t i = 0; i < kRoundTrips; ++i) {
      auto sent = Clock::now();
      co_await store::ping_on_loop(*client, i, cancel);
      trips.push_back(seconds_since(sent) * 1000);
    }
    // The fastest trip: a busy host (a process not scheduled for a while) only adds to a
    // trip, so a median of a few can still be far off on a healthy link.
    f.rtt_ms = fastest(trips);
    // Each way, values of a growing size (while one takes under kQuickStep), one at a
    // time: a set has no answer, so a ping after it comes back once the store has it.
    const auto each_way = budget / 2;
    const std::string key = "ddprun/link_probe/" + std::to_string(::getpid());
    std::vector<std::string> keys(1, key);
    size_t chunk = kFirstChunk;
    size_t sent_bytes = 0;
    double up_time = 0;
    auto up = Clock::now();
    while (sent_bytes < kProbeBytes && Clock::now() - up < each_way) {
      auto step = Clock::now();
      std::string value(chunk, 'x');
      co_await store::set_on_loop(*client, key, std::move(value), cancel);
      co_await store::ping_on_loop(*client, 0, cancel);
      sent_bytes += chunk;
      double took = seconds_since(step);
      up_time += took;
      if (took < kQuickStep && chunk < kLastChunk) chunk *= 2;
    }
    f.up_mbps = static_cast<double>(sent_bytes) / 1e6 / up_time;
    size_t got_bytes = 0;
    auto down = Clock::now();
    while (got_bytes < kProbeBytes && Clock::now() - down < each_way) {
      auto values = co_await store::get_now_on_loop(*client, keys, cancel);
      got_bytes += values.at(0).value_or("").size();
    }
    f.down_mbps = static_cast<double>(got_bytes) / 1e6 / seconds_since(down);
    co_await store::delete_on_loop(*client, key, cancel);
  } catch (const std::exception& e) {
    f.error = e.what();
  }
  co_return f;
}

std::vector<std::string> slow_links(const std::vector<std::string>& nodes,
                                    const std::vector<LinkFigures>& probes) {
  size_t n = nodes.size();
  if (n < 3 || probes.size() != n) return {};
  for (const auto& p : probes) {
    if (!p.error.empty()) return {};  // a node gone: its neighbours' figures mean nothing
  }
  // A probe's bandwidth is its slower way. A node's best is its faster probe: a node on
  // a slow link has no fast probe, while a healthy node has one unless both of its
  // neighbours are slow (they run at the same time, so one node's slow link also holds
  // up the answers its neighbours' probes wait for).
  auto bw = [&](size_t g) { return std::min(probes[g].up_mbps, probes[g].down_mbps); };
  auto rtt = [&](size_t g) { return probes[g].rtt_ms; };
  std::vector<double> best_bw(n), best_rtt(n), probe_bw(n), probe_rtt(n);
  for (size_t k = 0; k < n; ++k) {
    size_t before = (k + n - 1) % n;  // the probe of node k; probe k is node k's own
    best_bw[k] = std::max(bw(before), bw(k));
    best_rtt[k] = std::min(rtt(before), rtt(k));
    probe_bw[k] = bw(k);
    probe_rtt[k] = rtt(k);
  }
  auto figures = [&](size_t g) {
    return fmt::format("{:.0f} MB/s there, {:.0f} back, round trip {:.2f} ms", probes[g].up_mbps,
                       probes[g].down_mbps, probes[g].rtt_ms);
  };
  // Why figures are far off the median (a quarter of its bandwidth, or four times its
  // round trip and 1 ms more); "" when they are not.
  auto why_slow = [](double mbps, double mbps_median, double ms, double ms_median) {
    std::string why;
    if (mbps * 4 < mbps_median) why = fmt::format("{:.0f} MB/s against a median of {:.0f}", mbps, mbps_median);
    if (ms > 4 * ms_median && ms > ms_median + 1) {
      why += fmt::format("{}round trip {:.2f} ms against a median of {:.2f}", why.empty() ? "" : ", ",
                         ms, ms_median);
    }
    return why;
  };
  std::vector<std::string> said;
  std::vector<bool> named(n, false);
  double node_bw = median(best_bw), node_rtt = median(best_rtt);
  for (size_t k = 0; k < n; ++k) {
    std::string why = why_slow(best_bw[k], node_bw, best_rtt[k], node_rtt);
    if (why.empty()) continue;
    named[k] = true;
    size_t before = (k + n - 1) % n;
    said.push_back(fmt::format("node {}'s link is slow: at best {} (to {}: {}; from {}: {})",
                               nodes[k], why, nodes[(k + 1) % n], figures(k), nodes[before],
                               figures(before)));
  }
  double link_bw = median(probe_bw), link_rtt = median(probe_rtt);
  for (size_t g = 0; g < n; ++g) {
    size_t next = (g + 1) % n;
    if (named[g] || named[next]) continue;
    std::string why = why_slow(probe_bw[g], link_bw, probe_rtt[g], link_rtt);
    if (why.empty()) continue;
    said.push_back(fmt::format("the link between {} and {} is slow: {} ({})", nodes[g],
                               nodes[next], why, figures(g)));
  }
  return said;
}

}  // namespace ddprun::agent
