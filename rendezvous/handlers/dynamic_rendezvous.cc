#include "rendezvous/handlers/dynamic_rendezvous.h"

#include <unistd.h>
#include "common/host.h"

#include <algorithm>
#include <charconv>
#include <chrono>

#include <spdlog/spdlog.h>

#include "net/listen.h"
#include "rendezvous/host_clock.h"
#include "rendezvous/round/store_round.h"

namespace ddprun::rendezvous {
namespace {

using std::chrono::milliseconds;

// Where the address ends in a node id "<address>/<pid>/<port>" (npos if it is not one).
size_t address_end(const std::string& id) {
  size_t port_at = id.rfind('/');
  return port_at == std::string::npos || port_at == 0 ? std::string::npos
                                                      : id.rfind('/', port_at - 1);
}

}  // namespace

DynamicRendezvous::DynamicRendezvous(RendezvousParams params,
                                     std::unique_ptr<RendezvousBackend> backend)
    : params_(std::move(params)),
      backend_(std::move(backend)),
      prefix_(backend_->prefix(params_.run_id)) {
  address_ = params_.local_addr.empty() ? host_name() : params_.local_addr;
  // The store this node hosts for the workers when it is group rank 0, bound now: its
  // port is part of the node's id, so every member knows MASTER_ADDR and MASTER_PORT
  // the moment the round completes.
  worker_store_ = std::make_unique<store::TcpStoreServer>(
      params_.listen_all ? "" : net::listen_host_for(address_), 0);
  // Sorting node ids orders nodes by address, then pid: deterministic ranks.
  char pid[16];
  std::snprintf(pid, sizeof(pid), "%010d", static_cast<int>(::getpid()));
  node_id_ = address_ + "/" + pid + "/" + std::to_string(worker_store_->port());
  client_ = backend_->connect_on_loop(params_.read_timeout, 0);
  joiner_ = std::make_unique<DynamicJoiner>(
      *client_, backend_->state_store(*client_, prefix_, params_.read_timeout), prefix_,
      DynamicConfig{params_.min_nodes, params_.max_nodes, params_.last_call_timeout.count(),
                    params_.node_failure_limit, params_.quarantine_cooldown.count()},
      wall_clock_ms);
  joiner_->watch_absent(
      [this](std::vector<std::string> nodes, CancelSignal& cancel) {
        return dead_among(std::move(nodes), cancel);
      },
      params_.heartbeat_interval);
}

// Which of `nodes` are gone, judged by the backend from their liveness keys (read now).
Task<std::vector<std::string>> DynamicRendezvous::dead_among(std::vector<std::string> nodes,
                                                             CancelSignal& cancel) {
  auto values = co_await client_->get_now(backend_->liveness_keys(prefix_, nodes), cancel);
  co_return backend_->dead_members(nodes, values, node_id_);
}

Task<void> DynamicRendezvous::start(CancelSignal& cancel) {
  co_await backend_->start_liveness(prefix_, node_id_, cancel);
  primary_ = co_await backend_->primary(*client_, prefix_, node_id_, cancel);
}

DynamicRendezvous::~DynamicRendezvous() = default;

std::unique_ptr<RoundCoordinator> DynamicRendezvous::coordinate(const RendezvousInfo& info,
                                                                boost::asio::io_context& io,
                                                                Clock& clock) {
  if (params_.max_nodes == 1) return make_local_round(io);
  StoreRound::Options o;
  o.info = info;
  o.prefix = joiner_->round_prefix(info.round);
  o.store_where = backend_->endpoint();
  // The round's keys are all newer than its completion: waits need not read first.
  o.connect = [this, newer_than = info.completed_at] {
    return backend_->connect_on_loop(params_.read_timeout, newer_than);
  };
  // The members its seat named for the round (a round of one node has no seat).
  if (watched_round_ == info.round) o.watched = watched_;
  std::vector<std::string> watched;
  for (const auto& [rank, id] : o.watched) watched.push_back(id);
  o.liveness_keys = backend_->liveness_keys(prefix_, watched);
  o.dead_members = [this, watched](const std::vector<std::optional<std::string>>& values) {
    return backend_->dead_members(watched, values, node_id_);
  };
  o.heartbeat_interval = params_.heartbeat_interval;
  o.start_next = [this, round = info.round](bool failure, std::set<std::string> lost,
                                            CancelSignal& cancel) {
    return joiner_->start_next_round(round, failure, std::move(lost), cancel);
  };
  // The round's end says where the next round is, begun by the node that ends it:
  // the others, told, join it without reading where it is first.
  o.next_round_hint = [this] { return joiner_->next_round_hint(); };
  o.on_next_round = [this](const std::string& hint) { joiner_->told_next_round(hint); };
  o.state_key = joiner_->state_key();
  o.spares_in = [this](const std::string& value) { return joiner_->spares_in(value); };
  o.note_failure = [this](std::string reason, CancelSignal& cancel) {
    return count_failure(std::move(reason), cancel);
  };
  if (!backend_->hosted()) {  // etcd: see end_job()
    o.close_run = [this](CancelSignal& cancel) { return joiner_->close(false, cancel); };
    final_end_mine_.reset();
    o.on_end_writer = [this](const RoundEnd& end, std::optional<bool> this_node) {
      if (end.kind == RoundEnd::Kind::kFinal) final_end_mine_ = this_node;
    };
  }
  return std::make_unique<StoreRound>(io, clock, std::move(o));
}

// A failure of this node's workers counts towards its quarantine; one that puts it
// there is said.
Task<void> DynamicRendezvous::count_failure(std::string reason, CancelSignal& cancel) {
  // By agent: another agent at the same address (one host, host networking) is not
  // quarantined with this one.
  auto q = co_await joiner_->note_failure(node_id_, std::move(reason), cancel);
  if (q) {
    spdlog::error("this node is quarantined: {}; the job goes on without it for {} s", q->reason,
                  (q->until_ms - wall_clock_ms() + 999) / 1000);
  }
}

Task<void> DynamicRendezvous::finish_job(CancelSignal& cancel) { return end_job(false, cancel); }

Task<void> DynamicRendezvous::job_failed(CancelSignal& cancel) { return end_job(true, cancel); }

Task<std::optional<std::chrono::milliseconds>> DynamicRendezvous::clock_offset(
    CancelSignal& cancel) {
  std::optional<std::chrono::milliseconds> offset;
  if (params_.max_nodes > 1) offset = co_await backend_->clock_offset(*client_, cancel);
  co_return offset;
}

std::vector<ServedStore> DynamicRendezvous::served_stores() const {
  std::vector<ServedStore> out;
  out.push_back({"workers", worker_store_->connection_count(), worker_store_->request_counts()});
  if (auto* state = backend_->server()) {
    out.push_back({"rendezvous", state->connection_count(), state->request_counts()});
  }
  return out;
}

Task<void> DynamicRendezvous::keep_out(std::string reason, CancelSignal& cancel) {
  if (params_.max_nodes == 1) co_return;
  try {
    co_await joiner_->keep_out(address_, std::move(reason), cancel);
  } catch (const std::exception& e) {
    spdlog::warn("could not tell the other nodes why this node leaves: {}", e.what());
  }
}

Task<void> DynamicRendezvous::end_job(bool failed, CancelSignal& cancel) {
  if (params_.max_nodes == 1) {
    backend_->stop_serving();  // nobody else uses it
    co_return;
  }
  bool hosts = backend_->hosts_state();
  if (!hosts && backend_->hosted()) co_return;
  try {
    // The state outlives the agents (etcd): once is enough. Where every node closed
    // it, each read and wrote a state that names every node: N x N at the job's end.
    // A job that succeeded was closed before any node learnt it (coordinate()'s
    // close_run). (Where every node claimed "closing" then, most read it before the
    // first claim landed, and claimed too: at 1,024 agents 0.9 compare-and-sets per
    // agent, each a write on etcd even where it loses.)
    if (!hosts && !failed) co_return;
    if (!hosts) {
      // A failed job whose last round's end is known: its writer closes the run, the
      // others nothing. (Where each claimed "closing", each read it as the end reached
      // it, and those that read before the first claim landed claimed too: up to 2
      // etcd requests per node, a write each.)
      if (final_end_mine_ == false) co_return;
      if (!final_end_mine_) {
        // Who wrote the end is not known (the store did not answer this node's): the
        // first to claim "closing" closes the run. A read first: on etcd a
        // compare-and-set is a write even where it loses.
        std::string key = prefix_ + "closing";
        std::vector<std::string> keys(1, key);
        auto claimed = co_await client_->get_now(std::move(keys), cancel);
        if (claimed.at(0)) co_return;
        std::string none;
        std::string me = node_id_;
        std::string held = co_await client_->compare_set(key, none, me, cancel);
        if (held != node_id_) co_return;
      }
    }
    co_await joiner_->close(failed, cancel);
  } catch (const std::exception& e) {
    spdlog::warn("could not close the rendezvous: {}", e.what());
  }
  // The host serves until the others have left, whether the job succeeded or failed: a
  // node hears of the round's end by a wait on "over" and then reads it, a second
  // request; a host gone in between (a node slow to read, on a loaded machine) left it
  // with a lost store for a cause instead of the job's. After a stop signal, the signal's
  // last words bound it (`cancel`).
  if (hosts) co_await backend_->linger(std::chrono::seconds(5), cancel);
}

// Agents that share an address (several on one host, host networking, loopback) are
// said once, by the nodes that know every member: each is its own node (quarantine
// keys the agent), but a host's trouble is all of theirs.
void DynamicRendezvous::say_shared_addresses(const std::vector<std::string>& members) {
  if (said_shared_) return;
  std::map<std::string, int> agents;
  for (const auto& m : members) ++agents[node_address(m)];
  std::string shared;
  for (const auto& [address, n] : agents) {
    if (n > 1) shared += (shared.empty() ? "" : ", ") + std::to_string(n) + " at " + address;
  }
  if (shared.empty()) return;
  said_shared_ = true;
  spdlog::warn(
      "agents share an address ({}): each is its own node (for quarantine, "
      "ranks), but they share that host's network and devices; --local_addr names "
      "a node by its own address",
      shared);
}

void DynamicRendezvous::cancel() { cancel_.cancel(); }

Task<RendezvousInfo> DynamicRendezvous::next_rendezvous(int round, int local_world_size) {
  RendezvousInfo info;
  try {
    // The primary keeps the run, which names every member.
    bool whole_state = primary_ || params_.members_everywhere;
    // Until this node knows its round (make_info), the workers' store it would host
    // reads no new connection: a faster member may start the round's workers before
    // this node, their group rank 0, has reset it for them.
    worker_store_->hold_new_connections();
    JoinedRound joined = co_await joiner_->join(node_id_, local_world_size, round,
                                                params_.join_timeout, cancel_, whole_state);
    info = make_info(joined);
  } catch (const RendezvousClosedError& e) {
    throw RendezvousClosedError("rendezvous '" + params_.run_id + "' (" + backend_->where() +
                                "): " + e.what() + "; use a new --rdzv_id");
  } catch (const TimeoutError& e) {
    throw TimeoutError("rendezvous '" + params_.run_id + "' timed out after " +
                       std::to_string(params_.join_timeout.count() / 1000) + " s: " + e.what() +
                       " (" + backend_->where() + ")");
  }
  // The keys only earlier rounds needed go, best effort.
  co_await backend_->forget_history(prefix_, info.round, info.group_rank == 0, cancel_);
  co_return info;
}

RendezvousInfo DynamicRendezvous::make_info(const JoinedRound& joined) {
  const RoundSeat& seat = joined.seat;
  RendezvousInfo info;
  info.round = joined.round;
  info.restart_count = seat.restarts;
  info.group_rank = seat.group_rank;
  info.group_world_size = seat.group_world_size;
  info.first_rank = seat.first_rank;
  info.world_size = seat.world_size;
  info.spares = seat.spares;
  int64_t now = wall_clock_ms();
  for (const auto& [address, q] : seat.quarantined) {
    if (q.until_ms > now) info.quarantined.push_back({address, q.until_ms, q.reason});
  }
  info.completed_at = joiner_->completed_at();
  info.from_spare = joined.from_spare;
  if (joined.state) {
    info.members = ordered_members(*joined.state);
  } else if (info.group_rank == 0) {  // its seat names every other member
    info.members.push_back(node_id_);
    for (const auto& [rank, id] : seat.watched) info.members.push_back(id);
  }
  watched_ = seat.watched;
  watched_round_ = info.round;
  say_shared_addresses(info.members);
  // Group rank 0 hosts the workers' store; its keys start empty every round. Only
  // workers connect to it, and every worker of this node's earlier rounds is stopped by
  // now: whoever is still connected is a stale worker of a node dropped from the job
  // (frozen, or cut off), and is cut off before it can reach this round's keys. The
  // connections made since the join began are served after (this round's workers,
  // started by a faster member), but for a stopped worker's, closed unread.
  if (info.group_rank == 0) {
    if (size_t stale = worker_store_->close_connections(); stale > 0) {
      spdlog::warn("closed {} store connection(s) of workers from an earlier round", stale);
    }
    worker_store_->clear_except(kAgentPrefix);
    if (!params_.token.empty()) {
      std::vector<std::string> addresses;  // group rank 0 knows every member
      addresses.reserve(info.members.size());
      for (const auto& m : info.members) addresses.push_back(node_address(m));
      worker_store_->admit_only(addresses);
    }
  }
  worker_store_->serve_held();
  const std::string& host = seat.host;  // "<address>/<pid>/<port>"
  size_t port_at = host.rfind('/');
  size_t pid_at = address_end(host);
  int port = 0;
  if (pid_at != std::string::npos) {
    std::from_chars(host.data() + port_at + 1, host.data() + host.size(), port);
  }
  if (port <= 0 || port > 65535) {
    throw Error("rendezvous '" + params_.run_id + "': node id '" + host +
                "' is not <address>/<pid>/<port> (another program's keys under this run id?)");
  }
  info.master_addr = host.substr(0, pid_at);
  info.master_port = port;
  backend_->round_formed();  // members are alive as of now
  return info;
}

}  // namespace ddprun::rendezvous
