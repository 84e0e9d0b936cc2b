#include "launcher/rendezvous_flags.h"

#include <unistd.h>

#include "common/error.h"
#include "common/value_parsers.h"
#include "net/job_token.h"

namespace ddprun::launcher {
namespace {

// --standalone is one node with a store of its own: as torchrun, it sets the rendezvous
// flags; unlike torchrun, more nodes asked for is an error (torchrun waits for nodes that
// cannot find it) and the flags it overrides are said.
void check_standalone(const rendezvous::RendezvousFlags& f, std::vector<std::string>& notices) {
  if (f.nnodes.given && parse_nnodes(f.nnodes.source, f.nnodes.value).second > 1) {
    throw UsageError("--standalone runs one node, and " + f.nnodes.source + "=" + f.nnodes.value +
                     " asks for more: drop one of them");
  }
  std::string ignored;
  for (const auto* flag : {&f.rdzv_backend, &f.rdzv_endpoint, &f.rdzv_id}) {
    if (flag->given) ignored += (ignored.empty() ? "" : ", ") + flag->source + "=" + flag->value;
  }
  if (!ignored.empty()) {
    notices.push_back("--standalone overrides " + ignored +
                      " (as torchrun: a store of its own on a free port, a fresh run id)");
  }
}

}  // namespace

void fill_rendezvous(const Values& v, const EnvLookup& env, LaunchConfig& config,
                     bool token_by_munge) {
  auto flag = [&v](const char* name) {
    return rendezvous::FlagValue{v.str(name), v.source(name), v.given(name)};
  };
  rendezvous::RendezvousFlags f;
  f.nnodes = flag("nnodes");
  f.rdzv_backend = flag("rdzv_backend");
  f.rdzv_endpoint = flag("rdzv_endpoint");
  f.rdzv_id = flag("rdzv_id");
  f.rdzv_conf = flag("rdzv_conf");
  f.node_rank = flag("node_rank");
  f.master_addr = flag("master_addr");
  f.master_port = flag("master_port");
  f.local_addr = flag("local_addr");
  f.standalone = v.flag("standalone");
  if (f.standalone) check_standalone(f, config.notices);
  config.rendezvous = rendezvous::parse_rendezvous(f);
  rendezvous::RendezvousParams& p = config.rendezvous;
  std::string token_source = f.rdzv_conf.source + " token_file";
  if (p.token_file == "-") {
    p.token = net::job_token::read_token_line(token_source, STDIN_FILENO);
  } else if (!p.token_file.empty()) {
    p.token = net::job_token::read_token_file(token_source, p.token_file);
  } else if (auto token = env("DDPRUN_JOB_TOKEN"); token && !token->empty()) {
    p.token = *token;
  }
  if (p.token.empty() && token_by_munge && p.max_nodes > 1 &&
      p.backend != rendezvous::Backend::kEtcd) {
    p.token_by_munge = true;  // whether MUNGE works here is known only at launch
  } else if (p.elastic() && p.backend == rendezvous::Backend::kC10d && p.token.empty()) {
    config.notices.emplace_back(
        "no job token: whoever reaches the rendezvous endpoint can join this job or "
        "read its keys; give every node the same --rdzv_conf=token_file=PATH or "
        "DDPRUN_JOB_TOKEN");
  } else if (!p.elastic() && p.max_nodes > 1 && p.token.empty()) {
    config.notices.emplace_back(
        "no job token: whoever reaches the master address can join this job or "
        "read and write its keys; give every node the same DDPRUN_JOB_TOKEN or "
        "--rdzv_conf=token_file=PATH");
  }
  p.node_failure_limit = parse_int(v.source("node_failure_limit"), v.str("node_failure_limit"));
  p.quarantine_cooldown =
      parse_seconds(v.source("quarantine_cooldown"), v.str("quarantine_cooldown"), false);
  if (v.given("quarantine_cooldown") && p.node_failure_limit <= 0) {
    throw UsageError(v.source("quarantine_cooldown") + "=" + v.str("quarantine_cooldown") +
                     ": needs --node_failure_limit=N (how many failures quarantine a node)");
  }
  if (p.node_failure_limit > 0 && !p.elastic()) {
    throw UsageError(v.source("node_failure_limit") + "=" + v.str("node_failure_limit") +
                     ": quarantine keeps a node out of an elastic job's rounds; it needs "
                     "--rdzv_backend=c10d with more than one node, or etcd");
  }
  config.standalone = f.standalone;
  config.agent.min_nodes = config.rendezvous.min_nodes;
  config.agent.max_nodes = config.rendezvous.max_nodes;
  config.agent.run_id = config.rendezvous.run_id;
}

}  // namespace ddprun::launcher
