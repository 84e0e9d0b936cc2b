#include "rendezvous/rendezvous_factory.h"

#include <spdlog/spdlog.h>

#include "common/host.h"
#include "common/loop_waits.h"
#include "rendezvous/backends/c10d_backend.h"
#include "rendezvous/backends/etcd_backend.h"
#include "rendezvous/handlers/dynamic_rendezvous.h"
#include "rendezvous/handlers/static_rendezvous.h"
#include "rendezvous/host_clock.h"
#include "rendezvous/join/dynamic_joiner.h"
#include "store/tcpstore/store_connect.h"

namespace ddprun::rendezvous {
namespace {

using Clock = std::chrono::steady_clock;

// Until one of etcd's members accepts a connection: etcd may still be coming up (a job
// script that starts it beside the first agent). Each failed try is said with its
// reason, the tries growing from 1 s to 8 s, each its whole length (a try that ends
// sooner, refused once too near its end to try again, waits out the rest: close to the
// deadline the tries would otherwise follow each other at once, each said); by
// `deadline` (--rdzv_conf read_timeout) the join fails with the last reason, naming
// every member.
Task<void> reach_etcd(const std::vector<store::EtcdEndpoint>& endpoints, Clock::time_point deadline,
                      CancelSignal& cancel) {
  if (endpoints.empty()) co_return;
  std::string names;
  for (const auto& e : endpoints) {
    names += (names.empty() ? "" : ", ") + e.host + ":" + std::to_string(e.port);
  }
  std::chrono::seconds window{1};
  std::string reason;
  for (size_t i = 0; Clock::now() < deadline; i = (i + 1) % endpoints.size()) {
    auto try_end = std::min(deadline, Clock::now() + window);
    try {
      co_await store::connect_on_loop(endpoints[i].host, endpoints[i].port, try_end, cancel);
      co_return;
    } catch (const store::ConnectTimeout& e) {
      reason = endpoints[i].host + ":" + std::to_string(endpoints[i].port) + ": " + e.reason();
    }
    auto left = std::chrono::ceil<std::chrono::seconds>(deadline - Clock::now());
    if (left.count() > 0) {
      spdlog::warn("waiting for etcd ({} s left, --rdzv_conf read_timeout): {}", left.count(),
                   reason);
    }
    if (i + 1 == endpoints.size()) window = std::min(window * 2, std::chrono::seconds(8));
    auto rest = std::chrono::duration_cast<std::chrono::microseconds>(try_end - Clock::now());
    if (rest.count() > 0) co_await sleep_for(rest, cancel);
  }
  throw TimeoutError("cannot reach etcd at " + names + " (last try: " + reason + ")");
}

// The backend, its store reached: waits for a store that is not up yet are the loop's.
Task<std::unique_ptr<RendezvousBackend>> open_backend(const RendezvousParams& p,
                                                      CancelSignal& cancel) {
  if (p.backend == Backend::kEtcd) {
    co_await reach_etcd(p.etcd_endpoints, Clock::now() + p.read_timeout, cancel);
    co_return std::make_unique<EtcdBackend>(p);
  }
  auto c10d = std::make_unique<C10dBackend>(p, /*connect_later=*/true);
  co_await c10d->reach(cancel);
  co_return c10d;
}

}  // namespace

Task<void> tell_unfit(RendezvousParams p, std::string reason, CancelSignal& cancel) {
  if (!p.elastic()) co_return;  // a fixed set of nodes: nobody keeps a list of who is out
  p.join_timeout = std::min<std::chrono::milliseconds>(p.join_timeout, kUnfitWait);
  p.read_timeout = std::min<std::chrono::milliseconds>(p.read_timeout, kUnfitWait);
  std::unique_ptr<RendezvousBackend> backend;
  if (p.backend == Backend::kEtcd) {
    backend = co_await open_backend(p, cancel);
  } else {
    if (p.c10d_is_host.value_or(false)) {
      throw Error("this node was to host the rendezvous store (is_host=1): the other nodes "
                  "cannot start without it");
    }
    auto c10d = std::make_unique<C10dBackend>(p, /*connect_later=*/true);
    if (c10d->hosts_state()) {
      throw Error("this node was to host the rendezvous store at " + c10d->endpoint() +
                  ": the other nodes cannot start without it (point --rdzv_endpoint at a "
                  "healthy node)");
    }
    co_await c10d->reach(cancel, /*join_only=*/true);  // an unfit node hosts nothing
    backend = std::move(c10d);
  }
  std::string prefix = backend->prefix(p.run_id);
  auto client = backend->connect_on_loop(p.read_timeout, 0);
  // On the heap: held in this frame, GCC 12 (docs/contributing.md) took the frame for a mismatched
  // new and delete (-Wmismatched-new-delete) once the joiner grew.
  auto joiner = std::make_unique<DynamicJoiner>(
      *client, backend->state_store(*client, prefix, p.read_timeout), prefix,
      DynamicConfig{p.min_nodes, p.max_nodes, p.last_call_timeout.count(), p.node_failure_limit,
                    p.quarantine_cooldown.count()},
      wall_clock_ms);
  std::string address = p.local_addr.empty() ? host_name() : p.local_addr;
  co_await joiner->keep_out(std::move(address), std::move(reason), cancel);
}

Task<std::unique_ptr<RendezvousHandler>> open_rendezvous(RendezvousParams p, CancelSignal& cancel) {
  if (p.elastic()) {
    auto backend = co_await open_backend(p, cancel);
    auto dynamic = std::make_unique<DynamicRendezvous>(p, std::move(backend));
    co_await dynamic->start(cancel);
    co_return std::move(dynamic);
  }
  std::unique_ptr<store::TcpStoreClient> connected;
  if (p.node_rank != 0) {
    store::TcpStoreClient::Options o;
    o.timeout = p.read_timeout;
    o.token = p.token;
    // Node 0 may not be up yet: the wait is said, with why.
    auto deadline = Clock::now() + p.join_timeout;
    net::Socket socket = co_await store::connect_saying_why(
        "node rank 0's store", p.master_addr, p.master_port, "--rdzv_conf join_timeout", deadline,
        cancel);
    connected = co_await store::greet_store(p.master_addr, p.master_port, o, std::move(socket),
                                            deadline, cancel);
  }
  co_return std::make_unique<StaticRendezvous>(p, std::move(connected));
}

}  // namespace ddprun::rendezvous
