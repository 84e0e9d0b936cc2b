#pragma once

// A raw TCP connection for byte-level tests of the store server: builds requests
// by hand and reads replies byte for byte, every read bounded by a timeout.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "store/tcpstore/tcp_store_protocol.h"

namespace ddprun::test {

using store::tcpstore::Numbering;
using store::tcpstore::Op;

/// Request bytes in a given numbering.
class Wire {
 public:
  Wire(Numbering n, Op op) { put(*store::tcpstore::op_to_wire(n, op)); }
  explicit Wire(uint8_t raw_opcode) { put(raw_opcode); }
  template <typename T>
  Wire& put(T v) {
    bytes.append(reinterpret_cast<const char*>(&v), sizeof(v));
    return *this;
  }
  Wire& str(const std::string& s) {
    put<uint64_t>(s.size());
    bytes += s;
    return *this;
  }
  Wire& keys(const std::vector<std::string>& ks) {
    put<uint64_t>(ks.size());
    for (const auto& k : ks) str(k);
    return *this;
  }
  std::string bytes;
};

class RawConnection {
 public:
  /// Connects to 127.0.0.1:port, from the loopback address `from` when given.
  explicit RawConnection(int port, const char* from = nullptr) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (from) {
      sockaddr_in source{};
      source.sin_family = AF_INET;
      ::inet_pton(AF_INET, from, &source.sin_addr);
      if (::bind(fd_, reinterpret_cast<sockaddr*>(&source), sizeof(source)) != 0) {
        throw std::runtime_error(std::string("cannot bind ") + from);
      }
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      throw std::runtime_error("connect failed");
    }
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  ~RawConnection() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawConnection(const RawConnection&) = delete;
  RawConnection(RawConnection&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }

  /// Opens a 2.x connection: VALIDATE then nothing else.
  static RawConnection v2(int port, const char* from = nullptr) {
    RawConnection c(port, from);
    c.send(Wire(Numbering::kV2, Op::kValidate).put(store::tcpstore::kValidationMagic).bytes);
    return c;
  }

  void send(const std::string& bytes) {
    size_t off = 0;
    while (off < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return;  // a closed connection shows up on the next read
      off += static_cast<size_t>(n);
    }
  }

  /// Exactly n bytes, or nullopt when the server closed or nothing came in time.
  std::optional<std::string> read(size_t n, int timeout_ms = 5000) {
    std::string out;
    while (out.size() < n) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, timeout_ms) <= 0) return std::nullopt;
      char buf[65536];
      ssize_t got = ::recv(fd_, buf, std::min(sizeof(buf), n - out.size()), 0);
      if (got <= 0) return std::nullopt;
      out.append(buf, static_cast<size_t>(got));
    }
    return out;
  }

  template <typename T>
  std::optional<T> read_scalar(int timeout_ms = 5000) {
    auto b = read(sizeof(T), timeout_ms);
    if (!b) return std::nullopt;
    T v;
    std::memcpy(&v, b->data(), sizeof(T));
    return v;
  }

  std::optional<std::string> read_bytes() {
    auto len = read_scalar<uint64_t>();
    if (!len) return std::nullopt;
    return read(*len);
  }

  /// True when the server closed the connection (EOF within the timeout).
  bool closed_by_server(int timeout_ms = 5000) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return false;
    char c;
    return ::recv(fd_, &c, 1, 0) <= 0;
  }

  /// Reads and discards until the server closes; false if it does not within the timeout.
  bool drains_to_eof(int timeout_ms = 10000) {
    char buf[65536];
    while (true) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, timeout_ms) <= 0) return false;
      ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return true;
    }
  }

  /// True when nothing arrives within `ms`.
  bool silent_for(int ms) {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, ms) == 0;
  }

  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

}  // namespace ddprun::test
