#include "rendezvous/token_gate.h"

#include <array>
#include <chrono>
#include <memory>

#include <spdlog/spdlog.h>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "net/job_token.h"
#include "net/peer_address.h"

namespace asio = boost::asio;
using asio::ip::tcp;

namespace ddprun::rendezvous {

struct TokenGate::Handshake {
  Handshake(tcp::socket s, asio::io_context& io, Admit a)
      : socket(std::move(s)), timer(io), admit(std::move(a)) {}
  tcp::socket socket;
  asio::steady_timer timer;
  Admit admit;
  std::string hello;  // what came of it so far
  std::string challenge;
  std::string line;
  std::string answer;  // what came so far
  std::array<char, 80> buf{};
};

TokenGate::TokenGate(asio::io_context& io, std::string token, std::string what)
    : io_(io), token_(std::move(token)), what_(std::move(what)) {}

void TokenGate::admit(tcp::socket socket, Admit admit) {
  if (token_.empty()) return admit(std::move(socket));
  auto h = std::make_shared<Handshake>(std::move(socket), io_, std::move(admit));
  h->timer.expires_after(std::chrono::seconds(10));
  h->timer.async_wait([this, h](const boost::system::error_code& ec) {
    if (!ec) refuse(*h, "no answer to the job-token challenge");
  });
  read_hello(h);
}

void TokenGate::admit_shared(tcp::socket socket, Admit admit, Admit plain) {
  if (token_.empty()) return plain(std::move(socket));
  // Only the first byte is looked at, and left where it is.
  auto h = std::make_shared<Handshake>(std::move(socket), io_, std::move(plain));
  bool from_member = known(h->socket);
  if (!from_member) {
    h->timer.expires_after(std::chrono::seconds(10));
    h->timer.async_wait([this, h](const boost::system::error_code& ec) {
      if (!ec) refuse(*h, "it sent nothing");
    });
  }
  h->socket.async_receive(
      asio::buffer(h->buf.data(), 1), tcp::socket::message_peek,
      [this, h, from_member, admit = std::move(admit)](auto ec, size_t n) mutable {
        h->timer.cancel();
        if (ec || n == 0) {
          // A member's idle connection closing (PyTorch 1.13's callback socket sends
          // nothing in its life) is no intrusion.
          if (!from_member) return refuse(*h, "closed before a request");
          boost::system::error_code ignored;
          return void(h->socket.close(ignored));
        }
        if (h->buf[0] != net::job_token::kHello[0]) {
          if (!from_member) return refuse(*h, "not a node of this job: none proved the job token "
                                              "from there");
          return h->admit(std::move(h->socket));
        }
        // An agent: once it proved the token, its address is a member's.
        auto remember = [this, admit = std::move(admit)](tcp::socket s) {
          boost::system::error_code e;
          auto peer = s.remote_endpoint(e);
          if (!e) members_.insert(net::unmapped(peer.address()));
          admit(std::move(s));
        };
        this->admit(std::move(h->socket), std::move(remember));
      });
}

bool TokenGate::known(const tcp::socket& socket) const {
  boost::system::error_code ec;
  auto peer = socket.remote_endpoint(ec);
  if (ec) return false;
  auto local = socket.local_endpoint(ec);
  if (ec) return false;
  auto address = net::unmapped(peer.address());
  // A connection from the address it reached comes from this host: a remote peer
  // cannot complete a TCP handshake with our own address as its source.
  return net::is_loopback_peer(address) || address == net::unmapped(local.address()) ||
         members_.count(address) > 0;
}

// The hello comes first; a byte that differs from it (a PyTorch client's request) is
// refused at once, without waiting for more.
void TokenGate::read_hello(const std::shared_ptr<Handshake>& h) {
  const std::string expected = net::job_token::kHello;
  size_t want = expected.size() - h->hello.size();
  h->socket.async_read_some(asio::buffer(h->buf.data(), want), [this, h, expected](auto ec,
                                                                                  size_t n) {
    if (ec) return refuse(*h, "no job-token hello");
    h->hello.append(h->buf.data(), n);
    if (expected.compare(0, h->hello.size(), h->hello) != 0) {
      return refuse(*h, "no job-token hello (not ddprun's agent)");
    }
    if (h->hello.size() < expected.size()) return read_hello(h);
    send_challenge(h);
  });
}

void TokenGate::send_challenge(const std::shared_ptr<Handshake>& h) {
  h->challenge = net::job_token::new_challenge();
  h->line = std::string(net::job_token::kChallengePrefix) + h->challenge + "\n";
  asio::async_write(h->socket, asio::buffer(h->line), [this, h](auto ec, size_t) {
    if (!ec) read_answer(h);
  });
}

// The answer is 64 lowercase hex digits and '\n': anything else is refused at its first
// wrong byte, without waiting for more.
void TokenGate::read_answer(const std::shared_ptr<Handshake>& h) {
  h->socket.async_read_some(asio::buffer(h->buf), [this, h](auto ec, size_t n) {
    if (ec) return refuse(*h, "no answer to the job-token challenge");
    constexpr size_t kHexDigits = 64;
    for (size_t i = 0; i < n; ++i) {
      char c = h->buf[i];
      bool fits = h->answer.size() < kHexDigits
                      ? (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')
                      : h->answer.size() == kHexDigits && c == '\n' && i + 1 == n;
      if (!fits) return refuse(*h, "no valid answer to the job-token challenge");
      if (c != '\n') h->answer += c;
    }
    if (h->answer.size() < kHexDigits || h->buf[n - 1] != '\n') return read_answer(h);
    h->timer.cancel();
    if (!net::job_token::proves(token_, h->challenge, h->answer)) {
      return refuse(*h, "a wrong job token");
    }
    asio::async_write(h->socket, asio::buffer("ok\n", 3), [h](auto ec, size_t) {
      if (!ec) h->admit(std::move(h->socket));
    });
  });
}

void TokenGate::refuse(Handshake& h, const char* why) {
  boost::system::error_code ec;
  auto peer = h.socket.remote_endpoint(ec);
  std::string address =
      ec ? std::string("an unknown address") : net::unmapped(peer.address()).to_string();
  if (refused_.insert(address).second) {
    spdlog::warn("{}: refused a connection from {} ({}); further ones from there are refused "
                 "silently",
                 what_, address, why);
  }
  h.timer.cancel();
  h.socket.close(ec);
}

}  // namespace ddprun::rendezvous
