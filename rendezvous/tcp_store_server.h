#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace ddprun::rendezvous {

/// A key-value server speaking PyTorch's TCPStore protocol (1.13 and 2.x clients,
/// told apart per connection), so real PyTorch workers can use it as their store.
/// Serves on its own thread and io_context; server-side waits, no polling. A
/// malformed, oversized or truncated request closes only that connection.
///
/// Thread-safety: all public methods may be called from any thread.
class TcpStoreServer {
 public:
  /// Binds and starts serving. `host` "" listens dual-stack on "::" (or 0.0.0.0 where
  /// IPv6 is off); port 0 picks a free port (read it back with port()). Bind first,
  /// publish after: no other process can race for the port. Throws StoreError naming
  /// the address.
  TcpStoreServer(const std::string& host, uint16_t port);
  /// Stops serving and closes every connection.
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  uint16_t port() const;

  /// Deletes every key not starting with `keep_prefix` (a new attempt must not see
  /// the workers' keys of the previous one). Returns how many were deleted.
  size_t clear_except(const std::string& keep_prefix);

  /// Open client connections (for tests and benchmarks).
  size_t connection_count();

  /// Waits until at most `n` clients are connected, or `max` has passed.
  void wait_until_connections_at_most(size_t n, std::chrono::milliseconds max);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ddprun::rendezvous
