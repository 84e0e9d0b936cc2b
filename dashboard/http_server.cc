#include "dashboard/http_server.h"

#include <chrono>
#include <optional>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
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

namespace ddprun::dashboard {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

constexpr std::chrono::seconds kRequestTimeout{30};
constexpr uint32_t kHeaderLimit = 8 * 1024;
constexpr const char* kPolicy =
    "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:";

std::string_view view(boost::beast::string_view s) { return {s.data(), s.size()}; }

// The host part of a Host header ("[::1]:8080" -> "[::1]", "localhost:80" -> "localhost").
std::string host_name_of(std::string_view host) {
  if (!host.empty() && host.front() == '[') return std::string(host.substr(0, host.find(']') + 1));
  return std::string(host.substr(0, host.find(':')));
}

bool loopback_name(const std::string& name) {
  return name == "localhost" || name == "[::1]" || name.rfind("127.", 0) == 0;
}

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const Routes& routes, bool loopback_only)
      : stream_(std::move(socket)), routes_(routes), loopback_only_(loopback_only) {}

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
        ec == asio::error::operation_aborted || ec == asio::error::connection_reset) {
      return close();
    }
    if (ec) return respond(Response{400, "text/plain", "bad request: " + ec.message() + "\n"}, false);
    const auto& req = parser_->get();
    if (loopback_only_ && !loopback_name(host_name_of(view(req[http::field::host])))) {
      return respond(Response{403, "text/plain",
                              "this dashboard answers only to localhost, 127.0.0.1 or [::1]\n"},
                     false);
    }
    Response r = routes_.handle(view(req.method_string()), view(req.target()));
    respond(std::move(r), req.keep_alive(), req.method() == http::verb::head);
  }

  void respond(Response r, bool keep_alive, bool head = false) {
    res_ = {};
    res_.result(static_cast<unsigned>(r.status));
    res_.version(11);
    res_.set(http::field::server, "ddprun");
    res_.set(http::field::content_type, r.content_type);
    res_.set(http::field::cache_control, "no-cache");
    res_.set("X-Content-Type-Options", "nosniff");
    res_.set("Content-Security-Policy", kPolicy);
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
  const Routes& routes_;
  bool loopback_only_;
};

}  // namespace

class HttpServer::Impl {
 public:
  Impl(const Routes& routes, const std::string& host, uint16_t port)
      : routes_(routes),
        acceptor_(net::open_acceptor(io_, host, port)),
        signals_(io_, SIGINT, SIGTERM),
        retry_(io_),
        loopback_only_(acceptor_.local_endpoint().address().is_loopback()) {
    signals_.async_wait([this](beast::error_code ec, int) {
      if (!ec) io_.stop();
    });
    accept();
  }

  uint16_t port() const { return acceptor_.local_endpoint().port(); }
  void run() { io_.run(); }
  void stop() { asio::post(io_, [this] { io_.stop(); }); }

 private:
  void accept() {
    acceptor_.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (!ec) {
        std::make_shared<Session>(std::move(socket), routes_, loopback_only_)->start();
        return accept();
      }
      if (ec == asio::error::operation_aborted) return;
      // Out of descriptors, say: try again shortly instead of spinning.
      if (!warned_) spdlog::warn("dashboard: cannot accept a connection: {}", ec.message());
      warned_ = true;
      retry_.expires_after(std::chrono::milliseconds(100));
      retry_.async_wait([this](beast::error_code e) {
        if (!e) accept();
      });
    });
  }

  const Routes& routes_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  asio::signal_set signals_;
  asio::steady_timer retry_;
  bool loopback_only_;
  bool warned_ = false;
};

HttpServer::HttpServer(const Routes& routes, const std::string& host, uint16_t port)
    : impl_(std::make_unique<Impl>(routes, host, port)) {}
HttpServer::~HttpServer() = default;
uint16_t HttpServer::port() const { return impl_->port(); }
void HttpServer::run() { impl_->run(); }
void HttpServer::stop() { impl_->stop(); }

}  // namespace ddprun::dashboard
