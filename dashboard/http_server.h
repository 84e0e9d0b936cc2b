#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "dashboard/routes.h"

namespace ddprun::dashboard {

/// Serves Routes over HTTP (net::HttpListener: keep-alive, small GET requests, loopback
/// names only when bound to loopback) on a loop of its own, on the thread that calls
/// run(). Pages may load nothing from elsewhere (Content-Security-Policy).
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
