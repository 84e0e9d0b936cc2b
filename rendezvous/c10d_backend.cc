#include "rendezvous/c10d_backend.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "rendezvous/rendezvous_handler.h"

namespace ddprun::rendezvous {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

}  // namespace

C10dBackend::C10dBackend(Options options) : options_(std::move(options)) {
  if (options_.is_host.value_or(true)) {
    try {
      server_ =
          std::make_unique<TcpStoreServer>(options_.host, static_cast<uint16_t>(options_.port));
    } catch (const StoreError& e) {
      // Another agent here already hosts it, or the endpoint is another machine.
      if (options_.is_host.value_or(false)) throw;
      spdlog::debug("not hosting the rendezvous store: {}", e.what());
    }
  }
  TcpStoreClient::Options o;
  o.timeout = options_.connect_timeout;
  probe_ = std::make_unique<TcpStoreClient>(options_.host, options_.port, o);
  probe_->set_timeout(options_.call_timeout);
}

C10dBackend::~C10dBackend() {
  stopping_ = true;
  if (heartbeat_client_) heartbeat_client_->interrupt();
  if (heartbeat_thread_.joinable()) heartbeat_thread_.join();
}

std::string C10dBackend::prefix(const std::string& run_id) const {
  return std::string(RendezvousHandler::kAgentPrefix) + "c10d/" + run_id + "/";
}

std::unique_ptr<Store> C10dBackend::connect(milliseconds timeout, int64_t /*newer_than*/) {
  TcpStoreClient::Options o;
  o.timeout = timeout;
  return std::make_unique<TcpStoreClient>(options_.host, options_.port, o);
}

std::string C10dBackend::endpoint() const {
  return (options_.host.find(':') != std::string::npos ? "[" + options_.host + "]"
                                                       : options_.host) +
         ":" + std::to_string(options_.port);
}

void C10dBackend::linger(milliseconds max) {
  if (server_) server_->wait_until_connections_at_most(3, max);  // our own
}

void C10dBackend::start_liveness(const std::string& prefix, const std::string& node) {
  TcpStoreClient::Options o;
  o.timeout = std::max(options_.heartbeat_interval * 2, milliseconds(2000));
  heartbeat_client_ = std::make_unique<TcpStoreClient>(options_.host, options_.port, o);
  heartbeat_thread_ = std::thread([this, key = prefix + "hb/" + node] { heartbeat_loop(key); });
}

// Heartbeats are a counter per node in a key of its own: cheap, and the shared state
// is never rewritten for them.
void C10dBackend::heartbeat_loop(const std::string& key) {
  int64_t beat = 0;
  while (!stopping_) {
    try {
      heartbeat_client_->set(key, std::to_string(++beat));
    } catch (const std::exception& e) {
      if (!stopping_) spdlog::debug("heartbeat failed: {}", e.what());
      return;
    }
    // Sleep in small steps so the destructor is not held up.
    auto until = Clock::now() + options_.heartbeat_interval;
    while (!stopping_ && Clock::now() < until) {
      std::this_thread::sleep_for(std::min<milliseconds>(
          milliseconds(50),
          std::chrono::duration_cast<milliseconds>(until - Clock::now()) + milliseconds(1)));
    }
  }
}

std::vector<std::string> C10dBackend::dead_members(const std::string& prefix,
                                                   const std::vector<std::string>& members,
                                                   const std::string& self) {
  std::vector<std::string> keys;
  keys.reserve(members.size());
  for (const auto& m : members) {
    std::string key = prefix;
    key += "hb/";
    key += m;
    keys.push_back(std::move(key));
  }
  // A member that has not beaten yet reads as "": judged from its first change.
  std::vector<std::string> beats = probe_->multi_get_now(keys);
  auto now = Clock::now();
  auto limit = options_.heartbeat_interval * options_.heartbeat_misses;
  std::vector<std::string> dead;
  for (size_t i = 0; i < members.size(); ++i) {
    const std::string& m = members[i];
    if (m == self) continue;
    auto it = seen_.find(m);
    if (it == seen_.end() || it->second.first != beats[i]) {
      seen_[m] = {beats[i], now};
    } else if (now - it->second.second > limit) {
      dead.push_back(m);
    }
  }
  return dead;
}

}  // namespace ddprun::rendezvous
