#include "dashboard/http_server.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>

#include "net/http_listener.h"

namespace ddprun::dashboard {
namespace {

namespace asio = boost::asio;

constexpr const char* kPolicy =
    "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:";

}  // namespace

class HttpServer::Impl {
 public:
  Impl(const Routes& routes, const std::string& host, uint16_t port)
      : listener_(io_, host, port,
                  [&routes](std::string_view method, std::string_view target) {
                    return routes.handle(method, target);
                  },
                  kPolicy, "dashboard"),
        signals_(io_, SIGINT, SIGTERM) {
    signals_.async_wait([this](const boost::system::error_code& ec, int) {
      if (!ec) io_.stop();
    });
  }

  uint16_t port() const { return listener_.port(); }
  void run() { io_.run(); }
  void stop() { asio::post(io_, [this] { io_.stop(); }); }

 private:
  asio::io_context io_;
  net::HttpListener listener_;
  asio::signal_set signals_;
};

HttpServer::HttpServer(const Routes& routes, const std::string& host, uint16_t port)
    : impl_(std::make_unique<Impl>(routes, host, port)) {}
HttpServer::~HttpServer() = default;
uint16_t HttpServer::port() const { return impl_->port(); }
void HttpServer::run() { impl_->run(); }
void HttpServer::stop() { impl_->stop(); }

}  // namespace ddprun::dashboard
