#include "agent/rendezvous_factory.h"

#include "rendezvous/c10d_backend.h"
#include "rendezvous/dynamic_rendezvous.h"
#include "rendezvous/etcd_backend.h"
#include "rendezvous/static_rendezvous.h"

namespace ddprun::agent {
namespace {

std::unique_ptr<rendezvous::RendezvousBackend> make_backend(const AgentConfig& c) {
  if (c.rdzv_backend == "etcd") {
    rendezvous::EtcdBackend::Options o;
    o.endpoints = rendezvous::parse_etcd_endpoints(c.rdzv_endpoint);
    o.key_prefix = c.etcd_prefix;
    o.call_timeout = c.read_timeout;
    o.heartbeat_interval = c.heartbeat_interval;
    o.heartbeat_misses = c.heartbeat_misses;
    return std::make_unique<rendezvous::EtcdBackend>(o);
  }
  rendezvous::C10dBackend::Options o;
  o.host = c.rdzv_host;
  o.port = c.rdzv_port;
  o.is_host = c.rdzv_is_host;
  o.connect_timeout = c.join_timeout;
  o.call_timeout = c.read_timeout;
  o.heartbeat_interval = c.heartbeat_interval;
  o.heartbeat_misses = c.heartbeat_misses;
  return std::make_unique<rendezvous::C10dBackend>(o);
}

}  // namespace

std::unique_ptr<rendezvous::RendezvousHandler> make_rendezvous(const AgentConfig& c) {
  if (c.rdzv_backend == "etcd" || (c.rdzv_backend == "c10d" && c.max_nodes > 1)) {
    rendezvous::DynamicRendezvous::Options o;
    o.run_id = c.run_id;
    o.local_addr = c.local_addr;
    o.config.min_nodes = c.min_nodes;
    o.config.max_nodes = c.max_nodes;
    o.config.last_call_timeout_ms = c.last_call_timeout.count();
    o.join_timeout = c.join_timeout;
    o.read_timeout = c.read_timeout;
    o.heartbeat_interval = c.heartbeat_interval;
    return std::make_unique<rendezvous::DynamicRendezvous>(o, make_backend(c));
  }
  rendezvous::StaticRendezvous::Options o;
  o.nnodes = c.max_nodes;
  o.node_rank = c.node_rank;
  o.master_addr = c.master_addr;
  o.master_port = c.master_port;
  o.join_timeout = c.join_timeout;
  return std::make_unique<rendezvous::StaticRendezvous>(o);
}

}  // namespace ddprun::agent
