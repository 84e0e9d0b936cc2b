#include "rendezvous/backends/c10d_backend.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "common/error.h"
#include "common/periodic_thread.h"
#include "net/socket.h"
#include "rendezvous/host_clock.h"
#include "rendezvous/rendezvous_handler.h"
#include "rendezvous/round/round_history.h"
#include "store/tcpstore/store_connect.h"

namespace ddprun::rendezvous {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

}  // namespace

C10dBackend::C10dBackend(RendezvousParams params, bool connect_later) : params_(std::move(params)) {
  if (params_.c10d_is_host.value_or(true)) try_hosting();
  if (connect_later) return;
  store::TcpStoreClient::Options o;
  o.token = params_.token;
  o.timeout = params_.join_timeout;
  store::TcpStoreClient reached(params_.c10d_host, params_.c10d_port, o);  // or TimeoutError
}

bool C10dBackend::try_hosting() {
  try {
    server_ = std::make_unique<store::TcpStoreServer>(
        params_.c10d_host, static_cast<uint16_t>(params_.c10d_port), params_.token,
        store::TcpStoreServer::Guests::kNone, params_.token_handout);
    not_hosting_.clear();
    return true;
  } catch (const StoreError& e) {
    // Another agent here already hosts it, or the endpoint is another machine.
    if (params_.c10d_is_host.value_or(false)) throw;
    spdlog::debug("not hosting the rendezvous store: {}", e.what());
    not_hosting_ = e.what();
    return false;
  }
}

Task<void> C10dBackend::reach(CancelSignal& cancel, bool join_only) {
  store::TcpStoreClient::Options o;
  o.token = params_.token;
  o.timeout = params_.read_timeout;
  auto deadline = Clock::now() + params_.join_timeout;
  // Two agents that start at once on the endpoint's host can both fail to listen there
  // (each sees the other's socket listening for an instant, and both give up): so one
  // that may host and finds nobody listening tries hosting again every few seconds. A
  // wait that goes on (the host not up yet, or a wrong endpoint) is said, with why.
  store::ConnectWaitSaid said("the rendezvous store", params_.c10d_host, params_.c10d_port,
                              "--rdzv_conf join_timeout", deadline);
  try {
    std::optional<net::Socket> connected;
    while (!connected) {
      bool may_host = !join_only && !params_.c10d_is_host.has_value() && !server_;
      auto until = std::min(deadline, said.next_line());
      if (may_host) until = std::min(until, Clock::now() + kHostAgain);
      try {
        connected =
            co_await store::connect_on_loop(params_.c10d_host, params_.c10d_port, until, cancel);
      } catch (const store::ConnectTimeout& e) {
        if (until == deadline) throw;
        if (may_host && try_hosting()) {
          spdlog::debug("hosting the rendezvous store: nobody else did");
        }
        said.failed(e.reason());
      }
    }
    // Only the proof that the store answers: the rounds make connections of their own.
    co_await store::greet_store(params_.c10d_host, params_.c10d_port, o, std::move(*connected),
                                deadline, cancel);
  } catch (const TimeoutError& e) {
    if (not_hosting_.empty()) throw;
    // Why this node joins a store there rather than hosting it: often the answer.
    throw TimeoutError(std::string(e.what()) +
                       " (this node does not host the store: " + not_hosting_ + ")");
  }
}

C10dBackend::~C10dBackend() {
  if (!heartbeat_) return;
  heartbeat_->stop([this] {
    std::lock_guard lock(heartbeat_mutex_);
    if (heartbeat_client_) heartbeat_client_->interrupt();
  });
}

std::string C10dBackend::prefix(const std::string& run_id) const {
  return std::string(RendezvousHandler::kAgentPrefix) + "c10d/" + run_id + "/";
}

// The host edits its own table: no request.
Task<void> C10dBackend::forget_history(std::string prefix, int round, bool /*first_member*/,
                                       CancelSignal& /*cancel*/) {
  if (!server_) co_return;
  size_t n = server_->edit_keys(
      [&](store::KeyValueTable& keys) { return rendezvous::forget_history(keys, prefix, round); });
  if (n > 0) spdlog::debug("rendezvous: {} key(s) of earlier rounds deleted", n);
}

std::unique_ptr<store::Store> C10dBackend::connect(milliseconds timeout, int64_t /*newer_than*/) {
  return new_client(timeout);
}

// Connected by its first request, on the loop (reconnect_on_loop).
std::unique_ptr<store::LoopStore> C10dBackend::connect_on_loop(milliseconds timeout,
                                                               int64_t /*newer_than*/) {
  store::TcpStoreClient::Options o;
  o.token = params_.token;
  o.timeout = timeout;
  return on_loop(std::make_unique<store::TcpStoreClient>(params_.c10d_host, params_.c10d_port, o,
                                                         net::Socket()));
}

std::unique_ptr<store::TcpStoreClient> C10dBackend::new_client(milliseconds timeout) const {
  store::TcpStoreClient::Options o;
  o.token = params_.token;
  o.timeout = timeout;
  return std::make_unique<store::TcpStoreClient>(params_.c10d_host, params_.c10d_port, o);
}

std::string C10dBackend::endpoint() const {
  return net::host_port(params_.c10d_host, params_.c10d_port);
}

Task<std::optional<milliseconds>> C10dBackend::clock_offset(store::LoopStore& client,
                                                            CancelSignal& cancel) {
  return store_clock_offset(client, cancel);
}

Task<void> C10dBackend::linger(milliseconds max, CancelSignal& cancel) {
  // This agent's own two stay: the rendezvous client and the heartbeat's.
  if (server_) co_await server_->connections_at_most(2, max, cancel);
}

void C10dBackend::stop_serving() {
  if (server_) server_->stop();
}

// Connected by its first beat, on the heartbeat's thread.
std::unique_ptr<store::TcpStoreClient> C10dBackend::connect_heartbeat() const {
  store::TcpStoreClient::Options o;
  o.token = params_.token;
  o.timeout = std::max(params_.heartbeat_interval * 2, milliseconds(2000));
  return std::make_unique<store::TcpStoreClient>(params_.c10d_host, params_.c10d_port, o,
                                                 net::Socket());
}

Task<void> C10dBackend::start_liveness(std::string prefix, std::string node,
                                       CancelSignal& /*cancel*/) {
  heartbeat_client_ = connect_heartbeat();
  heartbeat_ = std::make_unique<PeriodicThread>(
      "ddprun-beat", params_.heartbeat_interval, PeriodicThread::First::kAtOnce,
      [this, key = prefix + "hb/" + node, beat = int64_t{0}](const PeriodicThread& t) mutable {
        return heartbeat(key, ++beat, t);
      });
  co_return;
}

// Heartbeats are a counter per node in a key of its own: cheap, and the shared state
// is never rewritten for them. False once the store is gone.
bool C10dBackend::heartbeat(const std::string& key, int64_t beat, const PeriodicThread& thread) {
  try {
    std::shared_ptr<store::TcpStoreClient> client;
    {
      std::lock_guard lock(heartbeat_mutex_);
      client = heartbeat_client_;
    }
    if (!client) {
      client = connect_heartbeat();
      std::lock_guard lock(heartbeat_mutex_);
      heartbeat_client_ = client;
      if (thread.stopping()) return false;
    }
    client->set(key, std::to_string(beat));
  } catch (const TimeoutError& e) {
    // The store did not answer in time (its host frozen, a network outage): beat
    // again next interval, on a new connection, so that this node is still heard
    // once the store answers again.
    if (!thread.stopping()) spdlog::debug("heartbeat timed out: {}; trying again", e.what());
    std::lock_guard lock(heartbeat_mutex_);
    heartbeat_client_.reset();
  } catch (const std::exception& e) {
    // The store is gone (its host died): the agent hears of it on its own calls.
    if (!thread.stopping()) spdlog::debug("heartbeat failed: {}", e.what());
    return false;
  }
  return true;
}

std::vector<std::string> C10dBackend::liveness_keys(const std::string& prefix,
                                                    const std::vector<std::string>& members) {
  return member_keys(prefix + "hb/", members);
}

std::vector<std::string> C10dBackend::dead_members(
    const std::vector<std::string>& members, const std::vector<std::optional<std::string>>& values,
    const std::string& self) {
  // A member that has not beaten yet reads as "": judged from its first change.
  std::vector<std::string> beats;
  beats.reserve(values.size());
  for (const auto& v : values) beats.push_back(v.value_or(""));
  beats.resize(members.size());
  auto now = Clock::now();
  auto limit = params_.heartbeat_interval * params_.heartbeat_misses;
  // Silence is judged only over time this node watched the store: if it could not for
  // longer than a limit (this agent was frozen, or the store did not answer: its host
  // frozen), nobody else could beat meanwhile either. Everyone's window starts again,
  // instead of dropping a node that was waiting for the same store.
  auto unwatched = std::max<Clock::duration>(limit, params_.heartbeat_interval * 2);
  bool watched = last_check_ == Clock::time_point{} || now - last_check_ <= unwatched;
  last_check_ = now;
  if (!watched) {
    for (size_t i = 0; i < members.size(); ++i) seen_[members[i]] = {beats[i], now};
    return {};
  }
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
