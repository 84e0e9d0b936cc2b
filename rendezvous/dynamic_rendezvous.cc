#include "rendezvous/dynamic_rendezvous.h"

#include <unistd.h>
#include "common/host.h"

#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>

namespace ddprun::rendezvous {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

int64_t wall_ms() {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string endpoint_text(const std::string& host, int port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

}  // namespace

DynamicRendezvous::DynamicRendezvous(Options options)
    : options_(std::move(options)),
      prefix_(std::string(kAgentPrefix) + "c10d/" + options_.run_id + "/") {
  address_ = options_.local_addr.empty() ? host_name() : options_.local_addr;
  // Sorting node ids orders nodes by address, then pid: deterministic ranks.
  char pid[16];
  std::snprintf(pid, sizeof(pid), "%010d", static_cast<int>(::getpid()));
  node_id_ = address_ + "/" + pid;

  bool try_host = options_.is_host.value_or(true);
  if (try_host) {
    try {
      server_ = std::make_unique<TcpStoreServer>(options_.endpoint_host,
                                                 static_cast<uint16_t>(options_.endpoint_port));
    } catch (const StoreError& e) {
      // Another agent here already hosts it, or the endpoint is another machine.
      if (options_.is_host.value_or(false)) throw;
      spdlog::debug("not hosting the rendezvous store: {}", e.what());
    }
  }
  TcpStoreClient::Options o;
  o.timeout = options_.join_timeout;
  client_ = std::make_unique<TcpStoreClient>(options_.endpoint_host, options_.endpoint_port, o);
  o.timeout = options_.read_timeout;
  heartbeat_client_ =
      std::make_unique<TcpStoreClient>(options_.endpoint_host, options_.endpoint_port, o);
  client_->set_timeout(options_.read_timeout);
  joiner_ = std::make_unique<DynamicJoiner>(*client_, prefix_, options_.config, wall_ms);
  heartbeat_thread_ = std::thread([this] { heartbeat_loop(); });
}

DynamicRendezvous::~DynamicRendezvous() {
  stopping_ = true;
  heartbeat_client_->interrupt();
  heartbeat_thread_.join();
}

std::unique_ptr<Store> DynamicRendezvous::connect() {
  TcpStoreClient::Options o;
  o.timeout = options_.read_timeout;
  return std::make_unique<TcpStoreClient>(options_.endpoint_host, options_.endpoint_port, o);
}

std::string DynamicRendezvous::round_prefix(int round) const {
  return joiner_->round_prefix(round);
}

std::string DynamicRendezvous::endpoint() const {
  return endpoint_text(options_.endpoint_host, options_.endpoint_port);
}

void DynamicRendezvous::cancel() {
  cancelled_ = true;
  client_->interrupt();
}

// Heartbeats are a counter per node in a key of its own: cheap, and the shared state
// is never rewritten for them.
void DynamicRendezvous::heartbeat_loop() {
  int64_t beat = 0;
  while (!stopping_) {
    try {
      heartbeat_client_->set(prefix_ + "hb/" + node_id_, std::to_string(++beat));
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

RendezvousInfo DynamicRendezvous::next_rendezvous(int round, int local_world_size) {
  try {
    return make_info(
        joiner_->join(node_id_, local_world_size, round, options_.join_timeout, cancelled_));
  } catch (const RendezvousClosedError& e) {
    throw RendezvousClosedError("rendezvous '" + options_.run_id + "' at " + endpoint() + ": " +
                                e.what() + "; use a new --rdzv_id");
  } catch (const TimeoutError& e) {
    throw TimeoutError("rendezvous '" + options_.run_id + "' timed out after " +
                       std::to_string(options_.join_timeout.count() / 1000) + " s: " + e.what() +
                       " (store at " + endpoint() + ")");
  }
}

RendezvousInfo DynamicRendezvous::make_info(const DynamicState& state) {
  RendezvousInfo info;
  info.round = state.round;
  info.restart_count = state.restarts;
  info.members = ordered_members(state);
  info.group_world_size = static_cast<int>(info.members.size());
  for (size_t i = 0; i < info.members.size(); ++i) {
    if (info.members[i] == node_id_) info.group_rank = static_cast<int>(i);
    info.local_world_sizes.push_back(state.participants.at(info.members[i]));
  }
  // Group rank 0 hosts the workers' store; its keys start empty every round.
  std::string master_key = round_prefix(state.round) + "master";
  if (info.group_rank == 0) {
    if (!worker_store_) worker_store_ = std::make_unique<TcpStoreServer>("", 0);
    worker_store_->clear_except(kAgentPrefix);
    client_->set(master_key, address_ + " " + std::to_string(worker_store_->port()));
  } else {
    worker_store_.reset();
  }
  std::string master = client_->get(master_key, options_.join_timeout);
  size_t space = master.rfind(' ');
  info.master_addr = master.substr(0, space);
  info.master_port = std::stoi(master.substr(space + 1));
  // Members are alive as of now.
  seen_.clear();
  return info;
}

void DynamicRendezvous::start_next_round(int round, bool failure,
                                         const std::set<std::string>& alive) {
  joiner_->start_next_round(round, failure, alive);
}

std::vector<std::string> DynamicRendezvous::dead_members(const RendezvousInfo& info) {
  std::vector<std::string> keys;
  for (const auto& m : info.members) keys.push_back(prefix_ + "hb/" + m);
  // A member that has not beaten yet reads as "": judged from its first change.
  std::vector<std::string> beats = client_->multi_get_now(keys);
  auto now = Clock::now();
  auto limit = options_.heartbeat_interval * options_.heartbeat_misses;
  std::vector<std::string> dead;
  for (size_t i = 0; i < info.members.size(); ++i) {
    const std::string& m = info.members[i];
    if (m == node_id_) continue;
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
