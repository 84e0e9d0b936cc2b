#include "net/http_listener.h"

#include <chrono>
#include <optional>
#include <utility>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <spdlog/spdlog.h>

#include "net/listen.h"

namespace ddprun::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

constexpr std::chrono::seconds kRequestTimeout{30};
constexpr uint32_t kHeaderLimit = 8 * 1024;

std::string_view view(boost::beast::string_view s) { return {s.data(), s.size()}; }

// The host part of a Host header ("[::1]:8080" -> "[::1]", "localhost:80" -> "localhost").
std::string host_name_of(std::string_view host) {
  if (!host.empty() && host.front() == '[') return std::string(host.substr(0, host.find(']') + 1));
  return std::string(host.substr(0, host.find(':')));
}

bool loopback_name(const std::string& name) {
  return name == "localhost" || name == "[::1]" || name.rfind("127.", 0) == 0;
}

struct Site {
  HttpListener::Handler handler;
  std::string policy;
  bool loopback_only = false;
  bool open = true;  // false once the listener is gone: its handler may be too
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, std::shared_ptr<Site> site)
      : stream_(std::move(socket)), site_(std::move(site)) {}

  void start() { read(); }

 private:
  void read() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    stream_.expires_after(kRequestTimeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       self->on_read(ec);
                     });
  }

  void on_read(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == asio::error::operation_aborted || ec == asio::error::connection_reset ||
        !site_->open) {
      return close();
    }
    if (ec) {
      return respond(HttpResponse{400, "text/plain", "bad request: " + ec.message() + "\n"}, false);
    }
    const auto& req = parser_->get();
    if (site_->loopback_only && !loopback_name(host_name_of(view(req[http::field::host])))) {
      return respond(HttpResponse{403, "text/plain",
                                  "this server answers only to localhost, 127.0.0.1 or [::1]\n"},
                     false);
    }
    HttpResponse r = site_->handler(view(req.method_string()), view(req.target()));
    respond(std::move(r), req.keep_alive(), req.method() == http::verb::head);
  }

  void respond(HttpResponse r, bool keep_alive, bool head = false) {
    res_ = {};
    res_.result(static_cast<unsigned>(r.status));
    res_.version(11);
    res_.set(http::field::server, "ddprun");
    res_.set(http::field::content_type, r.content_type);
    res_.set(http::field::cache_control, "no-cache");
    res_.set("X-Content-Type-Options", "nosniff");
    res_.set("Content-Security-Policy", site_->policy);
    res_.keep_alive(keep_alive);
    if (head) {
      res_.content_length(r.body.size());  // what a GET would get, without the bytes
    } else {
      res_.body() = std::move(r.body);
      res_.prepare_payload();
    }
    http::async_write(stream_, res_,
                      [self = shared_from_this(), keep_alive](beast::error_code ec, size_t) {
                        if (ec || !keep_alive) return self->close();
                        self->read();
                      });
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.close();
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> parser_;
  http::response<http::string_body> res_;
  std::shared_ptr<Site> site_;  // shared: a session may outlive the listener
};

}  // namespace

class HttpListener::Impl : public std::enable_shared_from_this<Impl> {
 public:
  Impl(asio::io_context& io, const std::string& host, uint16_t port, std::shared_ptr<Site> site,
       std::string what)
      : acceptor_(open_acceptor(io, host, port)), retry_(io), what_(std::move(what)) {
    site->loopback_only = acceptor_.local_endpoint().address().is_loopback();
    site_ = std::move(site);
  }

  uint16_t port() const { return acceptor_.local_endpoint().port(); }

  void accept() {
    acceptor_.async_accept([weak = weak_from_this()](beast::error_code ec, tcp::socket socket) {
      auto self = weak.lock();
      if (!self || ec == asio::error::operation_aborted) return;
      if (!ec) {
        std::make_shared<Session>(std::move(socket), self->site_)->start();
        return self->accept();
      }
      // Out of descriptors, say: try again shortly instead of spinning.
      if (!self->warned_) spdlog::warn("{}: cannot accept a connection: {}", self->what_, ec.message());
      self->warned_ = true;
      self->retry_.expires_after(std::chrono::milliseconds(100));
      self->retry_.async_wait([weak](beast::error_code e) {
        if (auto again = weak.lock(); again && !e) again->accept();
      });
    });
  }

  void close() noexcept {
    site_->open = false;
    beast::error_code ignored;
    acceptor_.close(ignored);
    try {
      retry_.cancel();
    } catch (...) {  // a failed cancel leaves a retry that finds the listener gone
    }
  }

 private:
  tcp::acceptor acceptor_;
  asio::steady_timer retry_;
  std::shared_ptr<Site> site_;
  std::string what_;
  bool warned_ = false;
};

HttpListener::HttpListener(asio::io_context& io, const std::string& host, uint16_t port,
                           Handler handler, std::string content_policy, std::string what) {
  auto site = std::make_shared<Site>();
  site->handler = std::move(handler);
  site->policy = std::move(content_policy);
  impl_ = std::make_shared<Impl>(io, host, port, std::move(site), std::move(what));
  impl_->accept();
}

HttpListener::~HttpListener() { impl_->close(); }

uint16_t HttpListener::port() const { return impl_->port(); }

}  // namespace ddprun::net
