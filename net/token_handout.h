#pragma once

#include <memory>
#include <optional>
#include <string>

#include "net/credentials.h"
#include "net/socket.h"

namespace ddprun::net {

/// Handing the job token out where nobody gave the nodes one (a Slurm step): the node
/// that hosts the job's store made it; another node connects there and says
/// "DDPRUN-MUNGE1 <credential>\n", the credential carrying "ddprun job token for <job>";
/// the host decodes it and, when it was made by the user the job runs as for this job,
/// answers "DDPRUN-TOKEN1 <credential>\n" whose payload is the token and which only
/// that user can decode — the token crosses the network only encrypted — and closes.
/// A request it refuses gets "DDPRUN-REFUSED1 <why>\n". A host that hands out no
/// token (it has none) just closes: its store takes the line for no request it knows.
struct TokenHandout {
  std::shared_ptr<Credentials> credentials;  // null: this node hands out nothing
  std::string job;                           // what an asking node must name
};

namespace token_handout {

constexpr const char* kAsk = "DDPRUN-MUNGE1 ";
constexpr const char* kHand = "DDPRUN-TOKEN1 ";
constexpr const char* kRefused = "DDPRUN-REFUSED1 ";
/// The longest line either side sends (a MUNGE credential is a few hundred bytes).
constexpr size_t kMaxLine = 4096;

/// What an asking node sends: kAsk, a credential naming `job`, '\n'.
std::string ask_line(Credentials& credentials, const std::string& job);

/// The host's answer to an asking line `credential` (what followed kAsk, without the
/// '\n'): the line to send back, kHand's or kRefused's. Never throws: a credential
/// that fails to decode, of another user or for another job is refused, saying which.
std::string answer(const TokenHandout& handout, const std::string& token,
                   const std::string& credential);

/// Asks the host at host:port (retrying the connection until `deadline`, as the
/// store's client does) for the token of `job`. nullopt when the host closed without
/// answering (it hands out no token). Throws StoreError naming the host and why it
/// refused, or what went wrong here; TimeoutError past `deadline`.
std::optional<std::string> fetch(Credentials& credentials, const std::string& host, int port,
                                 const std::string& job, Socket::Deadline deadline);

}  // namespace token_handout
}  // namespace ddprun::net
