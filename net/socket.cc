#include "net/socket.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <thread>

#include "common/error.h"

namespace ddprun::net {
namespace {

using Clock = std::chrono::steady_clock;

// poll() on `p` until `deadline` (restarted after a signal's handler ran): > 0 when
// `p` is ready, 0 once the deadline passed. Throws SystemError where poll fails.
int poll_until(pollfd& p, Clock::time_point deadline) {
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    p.revents = 0;
    int n = ::poll(&p, 1, static_cast<int>(std::clamp<long long>(left.count() + 1, 0, 60'000)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw SystemError("poll", errno);
    if (n > 0 || Clock::now() >= deadline) return n;
  }
}

// One non-blocking connect attempt to one address; -1 with errno set on failure.
int try_connect(const addrinfo* ai, Socket::Deadline deadline) {
  int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      int err = errno;
      ::close(fd);
      errno = err;
      return -1;
    }
    pollfd p{fd, POLLOUT, 0};
    int ready = 0;
    try {
      ready = poll_until(p, deadline);
    } catch (...) {
      ::close(fd);
      throw;
    }
    int err = ETIMEDOUT;
    socklen_t len = sizeof(err);
    if (ready > 0) ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      ::close(fd);
      errno = err;
      return -1;
    }
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

}  // namespace

Socket Socket::connect(const std::string& host, int port, Deadline deadline) {
  std::string peer = host_port(host, port);
  auto backoff = std::chrono::milliseconds(10);
  std::string last_error = "timed out";
  while (true) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
    std::unique_ptr<addrinfo, void (*)(addrinfo*)> addresses(found, ::freeaddrinfo);
    if (rc != 0) {
      last_error = ::gai_strerror(rc);
    } else {
      for (addrinfo* ai = found; ai; ai = ai->ai_next) {
        int fd = try_connect(ai, deadline);
        if (fd >= 0) return Socket(fd, peer);
        last_error = std::strerror(errno);
      }
    }
    if (Clock::now() + backoff >= deadline) break;
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  }
  throw TimeoutError("cannot connect to the store at " + peer + ": " + last_error);
}

Socket::~Socket() { close(); }

Socket::Socket(Socket&& other) noexcept : fd_(other.fd_), peer_(std::move(other.peer_)) {
  other.fd_ = -1;
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = other.fd_;
    peer_ = std::move(other.peer_);
    other.fd_ = -1;
  }
  return *this;
}

void Socket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Socket::shutdown() {
  int fd = fd_;
  if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
}

void Socket::wait_for(short events, Deadline deadline, const char* what) {
  pollfd p{fd_, events, 0};
  try {
    if (poll_until(p, deadline) > 0) return;
  } catch (const SystemError& e) {
    throw StoreError(std::string(what) + " " + peer_ + ": " + e.what());
  }
  throw TimeoutError(std::string("timed out waiting for the store at ") + peer_);
}

void Socket::send_all(const void* data, size_t size, Deadline deadline) {
  auto* p = static_cast<const char*>(data);
  while (size > 0) {
    size_t n = send_some(p, size);
    if (n == 0) wait_for(POLLOUT, deadline, "sending to");
    p += n;
    size -= n;
  }
}

size_t Socket::send_some(const void* data, size_t size) {
  if (fd_ < 0) throw StoreError("store connection to " + peer_ + " is closed");
  ssize_t n = ::send(fd_, data, size, MSG_NOSIGNAL);
  if (n >= 0) return static_cast<size_t>(n);
  if (errno == EAGAIN || errno == EINTR) return 0;
  int err = errno;
  close();
  throw StoreError("lost the store at " + peer_ + ": " + std::strerror(err));
}

size_t Socket::recv_available(void* data, size_t max) {
  if (fd_ < 0) throw StoreError("store connection to " + peer_ + " is closed");
  ssize_t n = ::recv(fd_, data, max, 0);
  if (n > 0) return static_cast<size_t>(n);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
  int err = n == 0 ? 0 : errno;
  close();
  throw StoreError("lost the store at " + peer_ + ": " +
                   (err ? std::strerror(err) : "connection closed"));
}

void Socket::recv_exact(void* data, size_t size, Deadline deadline) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    size_t n = recv_some(p, size, deadline);
    p += n;
    size -= n;
  }
}

size_t Socket::recv_some(void* data, size_t max, Deadline deadline) {
  while (true) {
    size_t n = recv_available(data, max);
    if (n > 0) return n;
    wait_for(POLLIN, deadline, "reading from");
  }
}

}  // namespace ddprun::net
