#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <boost/asio/io_context.hpp>

namespace ddprun::net {

/// What a request is answered with.
struct HttpResponse {
  int status = 200;
  std::string content_type;
  std::string body;
};

/// Serves GET and HEAD requests over HTTP/1.1 (Boost.Beast) on the caller's loop:
/// keep-alive, at most 8 KiB of header and no body, 30 s for a request to arrive, each
/// connection on its own; a garbage request gets 400 and the connection closed. Bound
/// to a loopback address, it answers only requests whose Host is a loopback name (a
/// web page elsewhere cannot reach it through DNS rebinding). What the answers may load
/// is limited by `content_policy` (Content-Security-Policy). The dashboard and the
/// agents' metrics endpoint both serve through it.
///
/// Thread-safety: the loop's thread; destroying it closes the listener, while the
/// connections still open end on the loop.
class HttpListener {
 public:
  using Handler = std::function<HttpResponse(std::string_view method, std::string_view target)>;

  /// Listens on host:port (port 0: a free one) on `io`. Throws StoreError naming the
  /// address (in use, cannot be bound). `what` names it in log lines ("dashboard").
  HttpListener(boost::asio::io_context& io, const std::string& host, uint16_t port,
               Handler handler, std::string content_policy, std::string what);
  ~HttpListener();
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  uint16_t port() const;

 private:
  class Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace ddprun::net
