#pragma once

#include <functional>
#include <set>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "net/token_handout.h"

namespace ddprun::net {

/// The server's side of the job-token handshake (job_token.h) for the connections one
/// listener accepts, on its io_context: a connection is handed on only once it proved
/// the token; any other is closed before a byte of the channel's own protocol is read,
/// at its first byte that cannot be part of the hello or the answer (a PyTorch client's
/// request) or after 10 s of silence. Each refused address is logged once. Not
/// thread-safe: used on the listener's io_context thread only.
class TokenGate {
 public:
  using Admit = std::function<void(boost::asio::ip::tcp::socket)>;

  /// `what` names the channel in the log ("store", "record receiver"). With a
  /// `handout`, a node that asks for the token with a credential gets it
  /// (net/token_handout.h) and is closed; it then connects again and proves it.
  /// Without one, such a node is told that none is handed out here.
  TokenGate(boost::asio::io_context& io, std::string token, std::string what,
            net::TokenHandout handout = {});

  /// Hands `socket` to `admit` once it proved the token (at once without a token).
  void admit(boost::asio::ip::tcp::socket socket, Admit admit);

  /// For a store that agents and PyTorch's clients share (a static job's): a connection
  /// that opens with the hello goes through the handshake to `admit`, and from then on
  /// its address is a member's; any other is handed to `plain` untouched (not a byte
  /// read) when it comes from a member's address, from this host or from loopback, and
  /// is closed otherwise. Without a token, every connection goes to `plain`.
  void admit_shared(boost::asio::ip::tcp::socket socket, Admit admit, Admit plain);

  bool enabled() const { return !token_.empty(); }

 private:
  struct Handshake;
  void read_hello(const std::shared_ptr<Handshake>& h);
  void read_request(const std::shared_ptr<Handshake>& h);
  void send_challenge(const std::shared_ptr<Handshake>& h);
  void read_answer(const std::shared_ptr<Handshake>& h);
  void refuse(Handshake& h, const char* why);
  void log_refusal(const boost::asio::ip::tcp::socket& socket, const std::string& why);
  bool known(const boost::asio::ip::tcp::socket& socket) const;

  boost::asio::io_context& io_;
  std::string token_;
  std::string what_;
  net::TokenHandout handout_;
  std::set<std::string> refused_;               // addresses already logged
  std::set<boost::asio::ip::address> members_;  // that proved the token (admit_shared)
};

}  // namespace ddprun::net
