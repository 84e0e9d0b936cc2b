#include "launcher/rendezvous_flags.h"

#include <algorithm>
#include <tuple>

#include "common/error.h"
#include "launcher/value_parsers.h"
#include "rendezvous/etcd_client.h"

namespace ddprun::launcher {
namespace {

void validate_rdzv_conf(const Values& v, const std::map<std::string, std::string>& conf) {
  static const char* kTimeouts[] = {"join_timeout",       "last_call_timeout", "close_timeout",
                                    "read_timeout",       "timeout",           "heartbeat",
                                    "keep_alive_interval"};
  for (const char* key : kTimeouts) {
    auto it = conf.find(key);
    if (it != conf.end()) {
      parse_seconds(v.source("rdzv_conf") + " " + key, it->second, /*allow_zero=*/false);
    }
  }
  for (const char* key : {"keep_alive_max_attempt"}) {
    auto it = conf.find(key);
    if (it != conf.end()) parse_int(v.source("rdzv_conf") + " " + key, it->second);
  }
  if (auto it = conf.find("is_host"); it != conf.end()) {
    parse_bool(v.source("rdzv_conf") + " is_host", it->second);
  }
}

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

// etcd: one or more endpoints, plain HTTP, keys under a prefix of the user's choice.
void fill_etcd(const Values& v, agent::AgentConfig& a) {
  if (v.str("rdzv_endpoint").empty()) {
    throw UsageError("--rdzv_backend=etcd needs --rdzv_endpoint=host[:port][,host[:port]...]");
  }
  rendezvous::parse_etcd_endpoints(v.str("rdzv_endpoint"));  // UsageError naming the bad one
  const auto& conf = a.rdzv_conf;
  std::string src = v.source("rdzv_conf") + " ";
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
    a.etcd_prefix = it->second;
    while (a.etcd_prefix.size() > 1 && a.etcd_prefix.back() == '/') a.etcd_prefix.pop_back();
  }
}

void fill_elastic(const Values& v, agent::AgentConfig& a) {
  if (a.rdzv_backend == "etcd") {
    fill_etcd(v, a);
  } else {
    if (v.str("rdzv_endpoint").empty()) {
      throw UsageError("--rdzv_backend=c10d with several nodes needs --rdzv_endpoint=host[:port]");
    }
    std::tie(a.rdzv_host, a.rdzv_port) =
        parse_endpoint(v.source("rdzv_endpoint"), v.str("rdzv_endpoint"), 29400);
  }
  const auto& conf = a.rdzv_conf;
  std::string src = v.source("rdzv_conf") + " ";
  auto seconds = [&](const char* key, std::chrono::milliseconds& out) {
    if (auto it = conf.find(key); it != conf.end())
      out = parse_seconds(src + key, it->second, false);
  };
  seconds("last_call_timeout", a.last_call_timeout);
  seconds("read_timeout", a.read_timeout);
  seconds("timeout", a.join_timeout);
  seconds("join_timeout", a.join_timeout);
  seconds("keep_alive_interval", a.heartbeat_interval);
  seconds("heartbeat", a.heartbeat_interval);
  if (auto it = conf.find("keep_alive_max_attempt"); it != conf.end()) {
    a.heartbeat_misses = std::max(1, parse_int(src + "keep_alive_max_attempt", it->second));
  }
  if (auto it = conf.find("is_host"); it != conf.end()) {
    a.rdzv_is_host = parse_bool(src + "is_host", it->second);
  }
}

}  // namespace

void fill_rendezvous(const Values& v, agent::AgentConfig& a) {
  auto [lo, hi] = parse_nnodes(v.source("nnodes"), v.str("nnodes"));
  a.min_nodes = lo;
  a.max_nodes = hi;
  a.rdzv_backend = v.str("rdzv_backend");
  if (a.rdzv_backend == "etcd-v2") a.rdzv_backend = "etcd";  // torchrun's name; same here
  if (a.rdzv_backend != "static" && a.rdzv_backend != "c10d" && a.rdzv_backend != "etcd") {
    throw UsageError(v.source("rdzv_backend") + "=" + a.rdzv_backend +
                     ": expected static, c10d or etcd");
  }
  a.rdzv_endpoint = v.str("rdzv_endpoint");
  a.run_id = v.str("rdzv_id");
  a.rdzv_conf = parse_key_values(v.source("rdzv_conf"), v.str("rdzv_conf"));
  validate_rdzv_conf(v, a.rdzv_conf);
  a.standalone = v.flag("standalone");
  a.node_rank = v.integer("node_rank");
  a.master_addr = v.str("master_addr");
  a.master_port = v.integer("master_port");
  if (a.master_port < 1 || a.master_port > 65535) {
    throw UsageError(v.source("master_port") + "=" + v.str("master_port") +
                     ": expected a port between 1 and 65535");
  }
  a.local_addr = v.str("local_addr");
  if (a.standalone) {
    // As torchrun: one node, and the rendezvous flags are ignored.
    a.min_nodes = a.max_nodes = 1;
    a.node_rank = 0;
    a.rdzv_backend = "c10d";
  }
  if (auto it = a.rdzv_conf.find("join_timeout"); it != a.rdzv_conf.end()) {
    a.join_timeout = parse_seconds("--rdzv_conf join_timeout", it->second, false);
  }
  if (a.max_nodes == 1) {
    // One node hosts its own store: on a free port (bound before it is published, so
    // nothing can race for it) unless the user asked for a port.
    if (a.standalone || !v.given("master_port")) a.master_port = 0;
    if (a.rdzv_backend != "static") {
      a.master_addr = a.local_addr.empty() ? "localhost" : a.local_addr;
    }
  }
  if (a.node_rank >= a.max_nodes && a.rdzv_backend == "static") {
    throw UsageError(v.source("node_rank") + "=" + v.str("node_rank") +
                     ": must be smaller than the number of nodes (" + std::to_string(a.max_nodes) +
                     ")");
  }
  if ((a.rdzv_backend == "c10d" && a.max_nodes > 1) || a.rdzv_backend == "etcd") {
    fill_elastic(v, a);
  }
  if (a.min_nodes != a.max_nodes && a.rdzv_backend == "static") {
    throw UsageError(v.source("nnodes") + "=" + v.str("nnodes") +
                     ": the static backend needs a fixed number of nodes");
  }
}

}  // namespace ddprun::launcher
