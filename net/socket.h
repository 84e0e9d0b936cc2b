#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "common/error.h"

namespace ddprun::net {

/// "host:port" for messages and URLs, an IPv6 literal in brackets ("[::1]:29400").
inline std::string host_port(const std::string& host, int port) {
  bool v6 = host.find(':') != std::string::npos && host.front() != '[';
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

/// A connected TCP socket with deadline-bounded blocking I/O (poll-based), used by
/// the store client. Owns its descriptor (O_CLOEXEC). Not thread-safe.
/// Errors: StoreError naming the peer; TimeoutError when a deadline passes.
class Socket {
 public:
  using Deadline = std::chrono::steady_clock::time_point;

  /// Connects to host:port (IPv4, IPv6, names), retrying with backoff until `deadline`.
  static Socket connect(const std::string& host, int port, Deadline deadline);

  /// Takes over `fd`, a TCP socket to `peer` (non-blocking, O_CLOEXEC; connected, or
  /// closed here if it never is), "host:port" for messages.
  static Socket adopt(int fd, std::string peer) { return Socket(fd, std::move(peer)); }

  Socket() = default;
  ~Socket();
  Socket(Socket&& other) noexcept;
  Socket& operator=(Socket&& other) noexcept;

  void send_all(const void* data, size_t size, Deadline deadline);
  void recv_exact(void* data, size_t size, Deadline deadline);
  /// Reads what is there (at least one byte, at most `max`), waiting until `deadline`.
  size_t recv_some(void* data, size_t max, Deadline deadline);
  /// Without waiting, for an event loop that waits on fd(): send_some() hands over what
  /// the kernel takes now (0: nothing, wait until writable); recv_available() reads
  /// what is there (0: nothing yet, wait until readable). StoreError as above.
  size_t send_some(const void* data, size_t size);
  size_t recv_available(void* data, size_t max);
  void close();
  /// Shuts the connection down (without releasing the descriptor), so a blocking
  /// call on another thread returns. Thread-safe.
  void shutdown();
  bool is_open() const { return fd_ >= 0; }
  /// The descriptor, for waiting on it in an event loop (still owned here).
  int fd() const { return fd_; }
  const std::string& peer() const { return peer_; }

 private:
  Socket(int fd, std::string peer) : fd_(fd), peer_(std::move(peer)) {}
  void wait_for(short events, Deadline deadline, const char* what);

  int fd_ = -1;
  std::string peer_;
};

}  // namespace ddprun::net
