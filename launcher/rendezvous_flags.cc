#include "launcher/rendezvous_flags.h"

namespace ddprun::launcher {

void fill_rendezvous(const Values& v, LaunchConfig& config) {
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
  config.rendezvous = rendezvous::parse_rendezvous(f);
  config.standalone = f.standalone;
  config.agent.min_nodes = config.rendezvous.min_nodes;
  config.agent.max_nodes = config.rendezvous.max_nodes;
  config.agent.run_id = config.rendezvous.run_id;
}

}  // namespace ddprun::launcher
