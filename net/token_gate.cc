#include "net/token_gate.h"

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

namespace ddprun::net {

struct TokenGate::Handshake {
  Handshake(tcp::socket s, asio::io_context& io, Admit a)
      : socket(std::move(s)), timer(io), admit(std::move(a)) {}
  tcp::socket socket;
  asio::steady_timer timer;
  Admit admit;
  std::string hello;  // what came of it so far
  std::string challenge;
  std::string line;
  std::string answer;   // what came so far
  std::string request;  // a request for the token, so far
  std::array<char, 80> buf{};
};

TokenGate::TokenGate(asio::io_context& io, std::string token, std::string what,
                     net::TokenHandout handout)
    : io_(io), token_(std::move(token)), what_(std::move(what)), handout_(std::move(handout)) {}

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
          if (!from_member) {
            return refuse(*h, "not a node of this job: none proved the job token from there");
          }
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

// The hello comes first (or a request for the token: both are 14 bytes); a byte that
// differs from both (a PyTorch client's request) is refused at once, without waiting
// for more.
void TokenGate::read_hello(const std::shared_ptr<Handshake>& h) {
  const std::string hello = net::job_token::kHello;
  // A request for the token is answered even where none is handed out: the asking node
  // is told so rather than left to guess.
  const std::string ask = token_.empty() ? "" : net::token_handout::kAsk;
  static_assert(std::char_traits<char>::length(net::job_token::kHello) ==
                std::char_traits<char>::length(net::token_handout::kAsk));
  size_t want = hello.size() - h->hello.size();
  h->socket.async_read_some(
      asio::buffer(h->buf.data(), want), [this, h, hello, ask](auto ec, size_t n) {
        if (ec) return refuse(*h, "no job-token hello");
        h->hello.append(h->buf.data(), n);
        bool asks = !ask.empty() && ask.compare(0, h->hello.size(), h->hello) == 0;
        if (!asks && hello.compare(0, h->hello.size(), h->hello) != 0) {
          return refuse(*h, "no job-token hello (not ddprun's agent)");
        }
        if (h->hello.size() < hello.size()) return read_hello(h);
        if (asks) return read_request(h);
        send_challenge(h);
      });
}

// A node asking for the token: its credential up to the line's end, then the answer,
// and the connection ends either way.
void TokenGate::read_request(const std::shared_ptr<Handshake>& h) {
  h->socket.async_read_some(asio::buffer(h->buf), [this, h](auto ec, size_t n) {
    if (ec) return refuse(*h, "no job-token request");
    h->request.append(h->buf.data(), n);
    size_t end = h->request.find('\n');
    if (end == std::string::npos) {
      if (h->request.size() > net::token_handout::kMaxLine) {
        return refuse(*h, "a job-token request too long");
      }
      return read_request(h);
    }
    h->timer.cancel();
    h->line = net::token_handout::answer(handout_, token_, h->request.substr(0, end));
    if (h->line.starts_with(net::token_handout::kRefused)) {
      std::string why = h->line.substr(std::string(net::token_handout::kRefused).size());
      why.pop_back();  // the '\n'
      log_refusal(h->socket, "asked for the job token: " + why);
    }
    asio::async_write(h->socket, asio::buffer(h->line), [h](auto, size_t) {
      boost::system::error_code ignored;
      h->socket.shutdown(tcp::socket::shutdown_both, ignored);
      h->socket.close(ignored);
    });
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
  log_refusal(h.socket, why);
  boost::system::error_code ec;
  h.timer.cancel();
  h.socket.close(ec);
}

void TokenGate::log_refusal(const tcp::socket& socket, const std::string& why) {
  boost::system::error_code ec;
  auto peer = socket.remote_endpoint(ec);
  std::string address =
      ec ? std::string("an unknown address") : net::unmapped(peer.address()).to_string();
  if (refused_.insert(address).second) {
    spdlog::warn(
        "{}: refused a connection from {} ({}); further ones from there are refused "
        "silently",
        what_, address, why);
  }
}

}  // namespace ddprun::net
