#include "launcher/slurm_flags.h"

#include "common/error.h"
#include "common/value_parsers.h"

namespace ddprun::launcher {
namespace {

std::string step_name(const SlurmStep& step) {
  std::string name = step.job_id;
  if (step.step_id) {
    name += '.';
    name += std::to_string(*step.step_id);
  }
  return name;
}

void refuse_unservable(const Values& v, const SlurmStep& step) {
  if (step.tasks > step.nodes) {
    throw UsageError("this Slurm step runs " + std::to_string(step.tasks) + " tasks on " +
                     std::to_string(step.nodes) + " node(s) (" + step.tasks_source + "=" +
                     std::to_string(step.tasks) +
                     "), but ddprun starts each node's workers "
                     "itself and needs one task per node: srun --ntasks-per-node=1 ddprun "
                     "--nproc_per_node=N ...");
  }
  if (!step.step_id && step.nodes > 1 && !v.given("nnodes")) {
    throw UsageError("ddprun runs outside a job step of a " + std::to_string(step.nodes) +
                     "-node Slurm allocation (" + step.nodes_source + "=" +
                     std::to_string(step.nodes) +
                     "), where only this node would train: "
                     "start it on every node with srun --ntasks-per-node=1 ddprun ..., or "
                     "pass --nnodes=1 to train on this node alone");
  }
}

// The first node's address: its name when that resolves, else what the lookup found.
std::string first_node_address(const SlurmStep& step, const NodeAddressLookup& lookup,
                               std::vector<std::string>& notices) {
  const std::string& name = step.node_names.front();
  auto found = lookup(name);
  if (!found) return name;
  notices.push_back("Slurm node " + name + " does not resolve; using its address " +
                    found->address + " (" + found->how + ")");
  return found->address;
}

std::string port_hint(const SlurmStep& step, int port, const std::string& flag) {
  return "port " + std::to_string(port) + " is ddprun's default for Slurm job " + step.job_id +
         " (derived from SLURM_JOB_ID); another program on this node holds it: pass " + flag +
         " with a free port, the same on every node";
}

void check_nnodes(const Values& v, const SlurmStep& step, std::vector<std::string>& notices) {
  auto [lo, hi] = parse_nnodes(v.source("nnodes"), v.str("nnodes"));
  if (step.nodes >= lo && step.nodes <= hi) return;
  notices.push_back(v.source("nnodes") + "=" + v.str("nnodes") + " does not match the " +
                    std::to_string(step.nodes) + " node(s) of this Slurm step (" +
                    step.nodes_source + "); using " + v.source("nnodes") + "=" + v.str("nnodes"));
}

}  // namespace

SlurmDefaults apply_slurm(Values& v, const SlurmStep& step, const NodeAddressLookup& lookup,
                          std::vector<std::string>& notices) {
  SlurmDefaults out;
  if (v.flag("standalone")) {
    if (step.nodes > 1) {
      notices.push_back("--standalone in a " + std::to_string(step.nodes) +
                        "-node Slurm step: each node runs a job of its own");
    }
    return out;
  }
  refuse_unservable(v, step);
  const std::string& backend = v.str("rdzv_backend");
  bool elastic = backend != "static";
  if (!v.given("rdzv_id")) {
    v.derive("rdzv_id", elastic ? step.job_id : step_name(step), "SLURM_JOB_ID");
  }
  if (v.given("nnodes")) {
    check_nnodes(v, step, notices);
  } else {
    v.derive("nnodes", std::to_string(step.nodes), step.nodes_source);
  }
  int max_nodes = parse_nnodes(v.source("nnodes"), v.str("nnodes")).second;
  if (max_nodes == 1 || step.node_names.empty()) return out;  // one node needs no address
  int port = slurm_port(step, elastic);
  if (!elastic) {
    if (!v.given("node_rank")) {
      v.derive("node_rank", std::to_string(step.node_id), "SLURM_NODEID");
    } else if (v.str("node_rank") != std::to_string(step.node_id)) {
      notices.push_back(v.source("node_rank") + "=" + v.str("node_rank") +
                        " differs from this node's SLURM_NODEID=" + std::to_string(step.node_id) +
                        "; using " + v.source("node_rank") + "=" + v.str("node_rank"));
    }
    if (!v.given("master_addr")) {
      v.derive("master_addr", first_node_address(step, lookup, notices), "the Slurm node list");
    }
    if (!v.given("master_port")) {
      v.derive("master_port", std::to_string(port), "SLURM_JOB_ID");
      out.port_hint = port_hint(step, port, "--master_port=PORT");
    }
    out.token_by_munge = true;
  } else if (backend == "c10d" && !v.given("rdzv_endpoint")) {
    std::string host = first_node_address(step, lookup, notices);
    if (host.find(':') != std::string::npos) host = "[" + host + "]";
    v.derive("rdzv_endpoint", host + ":" + std::to_string(port), "the Slurm node list");
    out.c10d_is_host = step.node_id == 0;
    out.token_by_munge = true;
    out.port_hint = port_hint(step, port, "--rdzv_endpoint=HOST:PORT");
  }
  return out;
}

}  // namespace ddprun::launcher
