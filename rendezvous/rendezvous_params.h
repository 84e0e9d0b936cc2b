#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "net/token_handout.h"
#include "store/etcd/etcd_endpoint.h"

namespace ddprun::rendezvous {

/// Where the nodes of a job agree on ranks.
enum class Backend {
  kStatic,  // fixed nodes with given ranks; node 0 hosts the store (torchrun's default)
  kC10d,    // elastic over a TCPStore one agent hosts (one node: a store of its own)
  kEtcd,    // elastic with the state in etcd
};

/// "static", "c10d" or "etcd".
const char* backend_name(Backend backend);

/// One rendezvous flag as the user gave it: its value, where it came from ("--nnodes"
/// or "PET_NNODES", for messages) and whether it was given at all.
struct FlagValue {
  std::string value;
  std::string source;
  bool given = false;
};

/// torchrun's rendezvous flags, unparsed: what parse_rendezvous() reads.
struct RendezvousFlags {
  FlagValue nnodes, rdzv_backend, rdzv_endpoint, rdzv_id, rdzv_conf, node_rank, master_addr,
      master_port, local_addr;
  bool standalone = false;
};

/// Everything a rendezvous needs, parsed and validated once: the launcher builds it,
/// the agent hands it to the rendezvous factory unopened. Plain data.
struct RendezvousParams {
  Backend backend = Backend::kStatic;
  std::string run_id = "none";
  int min_nodes = 1;
  int max_nodes = 1;
  int node_rank = 0;                      // static: this node's rank
  std::string master_addr = "127.0.0.1";  // static: node 0's store
  int master_port = 29500;                // 0: a free port (single-node jobs)
  std::string local_addr;                 // elastic: the address this node advertises
  /// Listeners other hosts reach (node 0's store, the workers' store, the record
  /// receiver) listen on every interface rather than on the address the node
  /// advertises (rdzv_conf listen_all=1).
  bool listen_all = false;
  /// The job token (rdzv_conf token_file=PATH, read by the launcher, or DDPRUN_JOB_TOKEN):
  /// the agents' channels admit only who proves it. "" = none.
  std::string token_file;
  std::string token;
  /// A Slurm step's nodes where none was given (launcher/slurm_token.h): the token is
  /// made by the node hosting the job's store and handed out in MUNGE credentials.
  bool token_by_munge = false;
  /// On that node: how it hands the token out (no credentials elsewhere).
  net::TokenHandout token_handout;
  std::chrono::milliseconds join_timeout{600'000};

  // Elastic only.
  std::string c10d_host = "localhost";
  int c10d_port = 29400;
  std::optional<bool> c10d_is_host;  // unset: host if the endpoint can be bound here
  std::vector<store::EtcdEndpoint> etcd_endpoints;
  std::string etcd_prefix = "/ddprun/rdzv";  // keys under <prefix>/<run id>/
  std::chrono::milliseconds last_call_timeout{30'000};
  /// Every node learns every member of each round (RendezvousInfo::members), not only
  /// group rank 0 and the primary: --preflight's link check has each probe the next.
  bool members_everywhere = false;
  std::chrono::milliseconds read_timeout{60'000};
  std::chrono::milliseconds heartbeat_interval{5'000};
  int heartbeat_misses = 3;
  /// Failures of a node's workers that keep it out of the rounds (0: never), for a
  /// cooldown that doubles each time (--node_failure_limit, --quarantine_cooldown).
  int node_failure_limit = 0;
  std::chrono::milliseconds quarantine_cooldown{300'000};

  /// Whether nodes may come and go: etcd, and c10d with more than one node. The one
  /// place that decides it.
  bool elastic() const {
    return backend == Backend::kEtcd || (backend == Backend::kC10d && max_nodes > 1);
  }
};

/// Parses and validates the flags with torchrun's defaults (the c10d endpoint's port
/// 29400, the rdzv_conf timeouts, --standalone's single node). Throws UsageError
/// naming the flag and value.
RendezvousParams parse_rendezvous(const RendezvousFlags& flags);

}  // namespace ddprun::rendezvous
