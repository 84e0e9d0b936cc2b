#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "dashboard/routes.h"

namespace ddprun::dashboard {

/// Serves Routes over HTTP/1.1 (Boost.Beast) on one thread: keep-alive, requests of
/// at most 8 KiB of header and no body, 30 s for a request to arrive, each connection
/// on its own; a garbage request gets 400 and the connection closed. Bound to a
/// loopback address, it answers only requests whose Host is a loopback name (a web
/// page elsewhere cannot reach it through DNS rebinding). Pages may load nothing from
/// elsewhere (Content-Security-Policy).
class HttpServer {
 public:
  /// Listens on host:port (port 0: a free one). Throws StoreError naming the address.
  HttpServer(const Routes& routes, const std::string& host, uint16_t port);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  uint16_t port() const;
  /// Serves until SIGINT or SIGTERM (or stop(), from any thread).
  void run();
  void stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ddprun::dashboard
