#pragma once

#include <memory>

#include "agent/agent_config.h"
#include "rendezvous/rendezvous_handler.h"

namespace ddprun::agent {

/// The rendezvous a configuration asks for: elastic (c10d) when several nodes may
/// come and go, static otherwise (one node included). Connects or hosts as it is
/// built: throws StoreError / TimeoutError naming the address.
std::unique_ptr<rendezvous::RendezvousHandler> make_rendezvous(const AgentConfig& c);

}  // namespace ddprun::agent
