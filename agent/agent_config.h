#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "agent/worker_spec.h"

namespace ddprun::agent {

/// Everything an agent needs to run one node's share of a job. Built by the
/// launcher from the command line; plain data.
struct AgentConfig {
  WorkerSpec spec;

  int min_nodes = 1;
  int max_nodes = 1;
  int node_rank = 0;
  std::string rdzv_backend = "static";
  std::string rdzv_endpoint;
  std::string run_id = "none";
  std::map<std::string, std::string> rdzv_conf;
  bool standalone = false;

  std::string master_addr = "127.0.0.1";
  /// Port of the store node 0 hosts; 0 = a free port (single-node jobs).
  int master_port = 29500;
  /// How long to wait for the other nodes (rdzv_conf join_timeout).
  std::chrono::milliseconds join_timeout{600'000};

  // Elastic (c10d) rendezvous, from --rdzv_endpoint and --rdzv_conf.
  std::string rdzv_host = "localhost";
  int rdzv_port = 29400;
  std::optional<bool> rdzv_is_host;
  std::string etcd_prefix = "/ddprun/rdzv";  // etcd backend: keys under <prefix>/<run id>/
  std::chrono::milliseconds last_call_timeout{30'000};
  std::chrono::milliseconds read_timeout{60'000};
  std::chrono::milliseconds heartbeat_interval{5'000};
  int heartbeat_misses = 3;
  std::string local_addr;

  /// Base of torchrun's log layout; empty means a fresh temporary directory that is
  /// removed again when the job succeeds.
  std::string log_dir;
  /// Time workers get between SIGTERM and SIGKILL when they are stopped.
  std::chrono::milliseconds grace_period{30'000};
  /// Value exported as OMP_NUM_THREADS when the user did not set it ("" = leave unset).
  std::string omp_num_threads;
};

}  // namespace ddprun::agent
