#include "launcher/slurm_token.h"

#include <chrono>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "net/job_token.h"
#include "net/token_handout.h"
#include "os/munge.h"

namespace ddprun::launcher {
namespace {

const char* kNoToken =
    "no job token: whoever reaches the job's store can join this job or read and "
    "write its keys; ";

bool hosts_the_store(const rendezvous::RendezvousParams& p) {
  return p.backend == rendezvous::Backend::kStatic ? p.node_rank == 0
                                                   : p.c10d_is_host.value_or(false);
}

}  // namespace

void settle_slurm_token(rendezvous::RendezvousParams& p, const CredentialsLoader& load,
                        std::vector<std::string>& notices) {
  if (!p.token_by_munge || !p.token.empty()) return;
  std::string why;
  std::shared_ptr<net::Credentials> credentials = load(&why);
  if (!credentials) {
    notices.push_back(kNoToken + ("MUNGE would make one for this Slurm step, but " + why) +
                      "; export the same DDPRUN_JOB_TOKEN to every node");
    return;
  }
  bool host = hosts_the_store(p);
  std::string first = p.backend == rendezvous::Backend::kStatic ? p.master_addr : p.c10d_host;
  int port = p.backend == rendezvous::Backend::kStatic ? p.master_port : p.c10d_port;
  if (host) {
    try {
      credentials->encode("ddprun: is munged there?", std::nullopt);
    } catch (const std::exception& e) {
      notices.push_back(kNoToken + std::string("MUNGE would make one for this Slurm step, but ") +
                        e.what() + "; export the same DDPRUN_JOB_TOKEN to every node");
      return;
    }
    p.token = net::job_token::new_challenge();
    p.token_handout = {credentials, p.run_id};
    return;
  }
  std::optional<std::string> token;
  try {
    token = net::token_handout::fetch(*credentials, first, port, p.run_id,
                                      std::chrono::steady_clock::now() + p.join_timeout);
  } catch (const TimeoutError& e) {
    throw TimeoutError("waiting for the job token from the Slurm step's first node: " +
                       std::string(e.what()));
  } catch (const std::exception& e) {
    throw StoreError(
        "cannot get the job token from the Slurm step's first node: " + std::string(e.what()) +
        " (export the same DDPRUN_JOB_TOKEN to every node to do without MUNGE)");
  }
  if (!token) {
    notices.push_back(kNoToken + std::string("the Slurm step's first node (") + first + ":" +
                      std::to_string(port) +
                      ") hands out none; export the same DDPRUN_JOB_TOKEN to every node");
    return;
  }
  p.token = *token;
}

CredentialsLoader munge_loader(EnvLookup env) {
  return [env = std::move(env)](std::string* why) -> std::shared_ptr<net::Credentials> {
    std::string conf = env("SLURM_CONF").value_or("");
    std::ifstream in(conf.empty() ? "/etc/slurm/slurm.conf" : conf);
    std::ostringstream text;
    text << in.rdbuf();
    return os::Munge::load(os::munge_socket_of(text.str()), why);
  };
}

}  // namespace ddprun::launcher
