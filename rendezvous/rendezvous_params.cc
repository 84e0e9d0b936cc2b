#include "rendezvous/rendezvous_params.h"

#include <algorithm>
#include <iterator>
#include <map>

#include "common/error.h"
#include "common/value_parsers.h"

namespace ddprun::rendezvous {
namespace {

using Conf = std::map<std::string, std::string>;

// "host", "host:port", "[v6]:port" -> host and port (default `port`).
std::pair<std::string, int> parse_endpoint(const std::string& flag, const std::string& value,
                                           int port) {
  std::string host = value;
  std::string port_text;
  if (!value.empty() && value[0] == '[') {
    size_t close = value.find(']');
    if (close == std::string::npos) throw UsageError(flag + "=" + value + ": missing ']'");
    host = value.substr(1, close - 1);
    if (close + 1 < value.size()) {
      if (value[close + 1] != ':') throw UsageError(flag + "=" + value + ": expected [addr]:port");
      port_text = value.substr(close + 2);
    }
  } else if (std::count(value.begin(), value.end(), ':') == 1) {
    host = value.substr(0, value.find(':'));
    port_text = value.substr(value.find(':') + 1);
  }
  if (!port_text.empty()) {
    port = parse_int(flag, port_text);
    if (port < 1 || port > 65535) throw UsageError(flag + "=" + value + ": bad port");
  }
  if (host.empty()) throw UsageError(flag + "=" + value + ": expected host[:port]");
  return {host, port};
}

Backend parse_backend(const FlagValue& f) {
  if (f.value == "static") return Backend::kStatic;
  if (f.value == "c10d") return Backend::kC10d;
  if (f.value == "etcd" || f.value == "etcd-v2") return Backend::kEtcd;  // torchrun's name too
  throw UsageError(f.source + "=" + f.value + ": expected static, c10d or etcd");
}

// The rdzv_conf keys: torchrun's (its c10d, etcd and static handlers'; close_timeout,
// rank and use_libuv accepted and not needed) and ddprun's own. Any other is a typo.
constexpr const char* kConfKeys[] = {
    "join_timeout", "last_call_timeout", "close_timeout", "read_timeout", "timeout", "is_host",
    "keep_alive_interval", "keep_alive_max_attempt", "heartbeat", "rank", "use_libuv",
    "protocol", "cacert", "cert", "key", "etcd_prefix", "token_file", "listen_all"};

void check_conf_keys(const std::string& src, const Conf& conf) {
  auto unknown = std::find_if(conf.begin(), conf.end(), [](const auto& entry) {
    return std::none_of(std::begin(kConfKeys), std::end(kConfKeys),
                        [&entry](const char* k) { return entry.first == k; });
  });
  if (unknown == conf.end()) return;
  std::string known;
  for (const char* k : kConfKeys) {
    if (!known.empty()) known += ", ";
    known += k;
  }
  throw UsageError(src + unknown->first + "=" + unknown->second +
                   ": not an rdzv_conf key (they are: " + known + ")");
}

// Every rdzv_conf entry ddprun reads, checked whatever the backend: a typo'd value is
// an error even where the entry does not matter.
void read_conf(const std::string& src, const Conf& conf, RendezvousParams& p) {
  auto seconds = [&](const char* key, std::chrono::milliseconds& out) {
    if (auto it = conf.find(key); it != conf.end())
      out = parse_seconds(src + key, it->second, false);
  };
  std::chrono::milliseconds unused{};
  seconds("close_timeout", unused);
  seconds("last_call_timeout", p.last_call_timeout);
  seconds("read_timeout", p.read_timeout);
  seconds("timeout", p.elastic() ? p.join_timeout : unused);  // torchrun's older name
  seconds("join_timeout", p.join_timeout);
  seconds("keep_alive_interval", p.heartbeat_interval);
  seconds("heartbeat", p.heartbeat_interval);
  if (auto it = conf.find("keep_alive_max_attempt"); it != conf.end()) {
    p.heartbeat_misses = std::max(1, parse_int(src + "keep_alive_max_attempt", it->second));
  }
  if (auto it = conf.find("is_host"); it != conf.end()) {
    p.c10d_is_host = parse_bool(src + "is_host", it->second);
  }
  if (auto it = conf.find("listen_all"); it != conf.end()) {
    p.listen_all = parse_bool(src + "listen_all", it->second);
  }
  if (auto it = conf.find("token_file"); it != conf.end()) {
    if (it->second.empty()) throw UsageError(src + "token_file=: names no file");
    p.token_file = it->second;
  }
}

// etcd: one or more endpoints, plain HTTP, keys under a prefix of the user's choice.
void read_etcd(const RendezvousFlags& f, const Conf& conf, RendezvousParams& p) {
  if (f.rdzv_endpoint.value.empty()) {
    throw UsageError("--rdzv_backend=etcd needs --rdzv_endpoint=host[:port][,host[:port]...]");
  }
  p.etcd_endpoints = store::parse_etcd_endpoints(f.rdzv_endpoint.value);
  std::string src = f.rdzv_conf.source + " ";
  if (auto it = conf.find("protocol"); it != conf.end() && it->second != "http") {
    throw UsageError(src + "protocol=" + it->second + ": only http is supported");
  }
  for (const char* key : {"cacert", "cert", "key"}) {
    if (conf.count(key)) throw UsageError(src + key + ": TLS to etcd is not supported");
  }
  if (auto it = conf.find("etcd_prefix"); it != conf.end()) {
    if (it->second.empty() || it->second[0] != '/') {
      throw UsageError(src + "etcd_prefix=" + it->second + ": expected a path like /ddprun/rdzv");
    }
    p.etcd_prefix = it->second;
    while (p.etcd_prefix.size() > 1 && p.etcd_prefix.back() == '/') p.etcd_prefix.pop_back();
  }
}

void read_elastic(const RendezvousFlags& f, const Conf& conf, RendezvousParams& p) {
  if (p.backend == Backend::kEtcd) return read_etcd(f, conf, p);
  if (f.rdzv_endpoint.value.empty()) {
    throw UsageError("--rdzv_backend=c10d with several nodes needs --rdzv_endpoint=host[:port]");
  }
  std::tie(p.c10d_host, p.c10d_port) =
      parse_endpoint(f.rdzv_endpoint.source, f.rdzv_endpoint.value, 29400);
}

}  // namespace

const char* backend_name(Backend backend) {
  switch (backend) {
    case Backend::kC10d:
      return "c10d";
    case Backend::kEtcd:
      return "etcd";
    case Backend::kStatic:
      break;
  }
  return "static";
}

RendezvousParams parse_rendezvous(const RendezvousFlags& f) {
  RendezvousParams p;
  std::tie(p.min_nodes, p.max_nodes) = parse_nnodes(f.nnodes.source, f.nnodes.value);
  p.backend = parse_backend(f.rdzv_backend);
  p.run_id = f.rdzv_id.value;
  Conf conf = parse_key_values(f.rdzv_conf.source, f.rdzv_conf.value);
  p.node_rank = parse_int(f.node_rank.source, f.node_rank.value);
  p.master_addr = f.master_addr.value;
  p.master_port = parse_int(f.master_port.source, f.master_port.value);
  if (p.master_port < 1 || p.master_port > 65535) {
    throw UsageError(f.master_port.source + "=" + f.master_port.value +
                     ": expected a port between 1 and 65535");
  }
  p.local_addr = f.local_addr.value;
  if (f.standalone) {
    // As torchrun: one node, and the rendezvous flags are ignored.
    p.min_nodes = p.max_nodes = 1;
    p.node_rank = 0;
    p.backend = Backend::kC10d;
  }
  if (p.max_nodes == 1) {
    // One node hosts its own store: on a free port (bound before it is published, so
    // nothing can race for it) unless the user asked for a port.
    if (f.standalone || !f.master_port.given) p.master_port = 0;
    if (p.backend != Backend::kStatic) {
      p.master_addr = p.local_addr.empty() ? "127.0.0.1" : p.local_addr;
    }
  }
  check_conf_keys(f.rdzv_conf.source + " ", conf);
  read_conf(f.rdzv_conf.source + " ", conf, p);
  if (p.backend == Backend::kStatic) {
    if (p.node_rank >= p.max_nodes) {
      throw UsageError(f.node_rank.source + "=" + f.node_rank.value +
                       ": must be smaller than the number of nodes (" +
                       std::to_string(p.max_nodes) + ")");
    }
    if (p.min_nodes != p.max_nodes) {
      throw UsageError(f.nnodes.source + "=" + f.nnodes.value +
                       ": the static backend needs a fixed number of nodes");
    }
  }
  if (p.elastic()) read_elastic(f, conf, p);
  return p;
}

}  // namespace ddprun::rendezvous
