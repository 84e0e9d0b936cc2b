#include "rendezvous/rendezvous_factory.h"

#include "rendezvous/c10d_backend.h"
#include "rendezvous/dynamic_rendezvous.h"
#include "rendezvous/etcd_backend.h"
#include "rendezvous/static_rendezvous.h"

namespace ddprun::rendezvous {
namespace {

std::unique_ptr<RendezvousBackend> make_backend(const RendezvousParams& p) {
  if (p.backend == Backend::kEtcd) {
    EtcdBackend::Options o;
    o.endpoints = p.etcd_endpoints;
    o.key_prefix = p.etcd_prefix;
    o.call_timeout = p.read_timeout;
    o.heartbeat_interval = p.heartbeat_interval;
    o.heartbeat_misses = p.heartbeat_misses;
    return std::make_unique<EtcdBackend>(o);
  }
  C10dBackend::Options o;
  o.host = p.c10d_host;
  o.port = p.c10d_port;
  o.is_host = p.c10d_is_host;
  o.connect_timeout = p.join_timeout;
  o.call_timeout = p.read_timeout;
  o.heartbeat_interval = p.heartbeat_interval;
  o.heartbeat_misses = p.heartbeat_misses;
  o.token = p.token;
  o.token_handout = p.token_handout;
  return std::make_unique<C10dBackend>(o);
}

}  // namespace

std::unique_ptr<RendezvousHandler> make_rendezvous(const RendezvousParams& p) {
  if (p.elastic()) {
    DynamicRendezvous::Options o;
    o.run_id = p.run_id;
    o.local_addr = p.local_addr;
    o.config.min_nodes = p.min_nodes;
    o.config.max_nodes = p.max_nodes;
    o.config.last_call_timeout_ms = p.last_call_timeout.count();
    o.join_timeout = p.join_timeout;
    o.read_timeout = p.read_timeout;
    o.heartbeat_interval = p.heartbeat_interval;
    o.members_only = !p.token.empty();
    o.listen_all = p.listen_all;
    return std::make_unique<DynamicRendezvous>(o, make_backend(p));
  }
  StaticRendezvous::Options o;
  o.nnodes = p.max_nodes;
  o.node_rank = p.node_rank;
  o.master_addr = p.master_addr;
  o.master_port = p.master_port;
  o.join_timeout = p.join_timeout;
  o.token = p.token;
  o.token_handout = p.token_handout;
  o.listen_all = p.listen_all;
  return std::make_unique<StaticRendezvous>(o);
}

}  // namespace ddprun::rendezvous
