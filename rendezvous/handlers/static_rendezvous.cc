#include "rendezvous/handlers/static_rendezvous.h"

#include <algorithm>
#include <charconv>

#include <boost/asio/ip/address.hpp>

#include "net/listen.h"
#include "rendezvous/host_clock.h"
#include "rendezvous/round/store_round.h"
#include "store/loop_store.h"

namespace ddprun::rendezvous {
namespace {

std::string node_key(int round, int node) {
  return static_round_prefix(round) + "node/" + std::to_string(node);
}

bool is_loopback(const std::string& host) {
  if (host == "localhost") return true;
  boost::system::error_code ec;
  auto address = boost::asio::ip::make_address(host, ec);
  return !ec && address.is_loopback();
}

std::string format_seconds(std::chrono::milliseconds d) {
  auto ms = d.count();
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

}  // namespace

std::string static_round_prefix(int round) {
  return std::string(RendezvousHandler::kAgentPrefix) + "static/round/" + std::to_string(round) +
         "/";
}

StaticRendezvous::StaticRendezvous(RendezvousParams params,
                                   std::unique_ptr<store::TcpStoreClient> connected)
    : params_(std::move(params)) {
  if (params_.node_rank == 0) {
    // A single node's store serves only its own workers: it listens on loopback, where
    // no other machine can reach it. Several nodes reach it at master_addr: it listens
    // there when that is this host's address, else on every interface (a name that
    // /etc/hosts maps to 127.0.1.1 here may be how the others reach us), as it does for
    // a single node given an address, or with listen_all.
    std::string listen_host;
    if (params_.max_nodes == 1) {
      if (is_loopback(params_.master_addr)) listen_host = params_.master_addr;
    } else if (!params_.listen_all) {
      listen_host = net::listen_host_for(params_.master_addr);
    }
    // Agents and workers share it: with a token, a worker is served from the address
    // of a node that proved it.
    server_ = std::make_unique<store::TcpStoreServer>(
        listen_host, static_cast<uint16_t>(params_.master_port), params_.token,
        store::TcpStoreServer::Guests::kMembers, params_.token_handout);
    port_ = server_->port();
    // Its own connections go where it listens (any address of it, when that is all).
    own_host_ = listen_host.empty() ? "127.0.0.1" : listen_host;
    if (params_.max_nodes > 1) client_ = store::on_loop(new_client());
  } else if (connected) {
    port_ = params_.master_port;
    connected->set_timeout(params_.read_timeout);  // a request is quick
    client_ = store::on_loop(std::move(connected));
  } else {
    port_ = params_.master_port;
    client_ = store::on_loop(new_client());
  }
}

// Connecting waits as long as a join may; a request is quick.
std::unique_ptr<store::TcpStoreClient> StaticRendezvous::new_client() const {
  store::TcpStoreClient::Options o;
  o.timeout = params_.join_timeout;
  o.token = params_.token;
  // Connected by its first request (on the loop: reconnect_on_loop()).
  auto client = std::make_unique<store::TcpStoreClient>(server_ ? own_host_ : params_.master_addr,
                                                        port_, o, net::Socket());
  client->set_timeout(params_.read_timeout);
  return client;
}

store::LoopStore& StaticRendezvous::loop_store() {
  if (!client_) client_ = store::on_loop(new_client());
  return *client_;
}

std::string StaticRendezvous::where() const {
  return params_.master_addr + ":" + std::to_string(port_);
}

Task<RendezvousInfo> StaticRendezvous::next_rendezvous(int round, int local_world_size) {
  cancel_.check();
  RendezvousInfo info;
  info.round = round;
  info.restart_count = round;  // every later static round follows a failure
  info.group_rank = params_.node_rank;
  info.group_world_size = params_.max_nodes;
  info.master_addr = params_.master_addr;
  info.master_port = port_;
  if (params_.max_nodes == 1) {
    // This node is the job: nobody to wait for or to tell, not one request. The last
    // attempt's worker keys go before a new worker starts (the first has none).
    if (round > 0) server_->clear_except(kAgentPrefix);
    info.count_ranks({local_world_size});
    co_return info;
  }
  std::string mine = node_key(round, params_.node_rank);
  std::string workers = std::to_string(local_world_size);
  co_await client_->set(mine, workers, cancel_);
  std::vector<std::string> keys;
  for (int k = 0; k < params_.max_nodes; ++k) keys.push_back(node_key(round, k));
  // Node 0 alone waits for every node's worker count; it writes each node's first rank
  // and the world size, then opens the round. Each other node waits for that and reads
  // its own: two keys, not every node's (each node reading all N made a start grow
  // as N squared). Apart (static_round_ranks.cc): see there.
  if (server_) co_return co_await open_round(std::move(info), std::move(keys));
  co_return co_await read_own_ranks(std::move(info), local_world_size, std::move(keys));
}

TimeoutError StaticRendezvous::join_timed_out(const std::vector<std::optional<std::string>>& there,
                                              int round) const {
  std::string missing;
  for (size_t k = 0; k < there.size(); ++k) {
    if (!there[k]) missing += (missing.empty() ? "" : ", ") + std::to_string(k);
  }
  if (missing.empty()) {
    return TimeoutError("node rank 0 did not open round " + std::to_string(round) + " within " +
                        format_seconds(params_.join_timeout) + " (store at " + where() + ")");
  }
  return TimeoutError("node rank(s) " + missing + " of " + std::to_string(params_.max_nodes) +
                      " did not join within " + format_seconds(params_.join_timeout) +
                      " (store at " + where() + ")");
}

std::vector<int> StaticRendezvous::worker_counts(const std::vector<std::string>& keys,
                                                 const std::vector<std::string>& values) const {
  std::vector<int> counts;
  for (size_t k = 0; k < keys.size(); ++k) {
    const std::string& value = values.at(k);
    int workers = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), workers);
    if (ec != std::errc() || end != value.data() + value.size() || workers < 0) {
      throw StoreError("the store at " + where() + " holds '" + value + "' at " + keys[k] +
                       ", not a worker count (another job on this port?)");
    }
    counts.push_back(workers);
  }
  return counts;
}

std::unique_ptr<RoundCoordinator> StaticRendezvous::coordinate(const RendezvousInfo& info,
                                                               boost::asio::io_context& io,
                                                               Clock& clock) {
  if (params_.max_nodes == 1) return make_local_round(io);
  StoreRound::Options o;
  o.info = info;
  o.prefix = static_round_prefix(info.round);
  o.store_where = where();
  o.connect = [this] { return on_loop(new_client()); };
  return std::make_unique<StoreRound>(io, clock, std::move(o));
}

Task<void> StaticRendezvous::finish_job(CancelSignal& cancel) {
  return serve_until_the_others_leave(cancel);
}

Task<void> StaticRendezvous::job_failed(CancelSignal& cancel) {
  return serve_until_the_others_leave(cancel);
}

// Node 0's store stays until the others let go (a few seconds at most): a node hears
// of the job's end by a wait, then reads it, a second request. After a stop signal,
// the signal's last words bound it (`cancel`).
Task<void> StaticRendezvous::serve_until_the_others_leave(CancelSignal& cancel) {
  constexpr std::chrono::seconds kLinger{5};
  if (!server_) co_return;
  // A single node's workers are gone, and nobody else uses its store: its thread ends
  // while the agent ends the rest, and the destructor finds it gone.
  if (params_.max_nodes == 1) {
    server_->stop();
    co_return;
  }
  co_await server_->connections_at_most(1, kLinger, cancel);
}

Task<std::optional<std::chrono::milliseconds>> StaticRendezvous::clock_offset(
    CancelSignal& cancel) {
  std::optional<std::chrono::milliseconds> offset;
  if (server_ || !client_) co_return offset;
  offset = co_await store_clock_offset(*client_, cancel);
  co_return offset;
}

std::vector<ServedStore> StaticRendezvous::served_stores() const {
  if (!server_) return {};
  return {{"workers", server_->connection_count(), server_->request_counts()}};
}

void StaticRendezvous::cancel() { cancel_.cancel(); }

}  // namespace ddprun::rendezvous
