#pragma once

#include <chrono>
#include <string>

#include "common/cancel_signal.h"
#include "common/coro.h"
#include "common/error.h"
#include "net/socket.h"

namespace ddprun::store {

/// connect_on_loop() ran out of time: what() names the store and the reason, reason()
/// is the last try's error alone ("Connection refused"), for a caller that says it.
class ConnectTimeout : public TimeoutError {
 public:
  ConnectTimeout(const std::string& peer, std::string reason)
      : TimeoutError("cannot connect to the store at " + peer + ": " + reason),
        reason_(std::move(reason)) {}
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

// A store's connection as a coroutine on a loop makes and uses it: each wait is the
// loop's completion, which `cancel` ends at once (Error).

/// Connects to host:port (IPv4, IPv6, names) from a coroutine on a loop, as
/// net::Socket::connect() does (every address of the name, again with backoff while
/// nothing listens there, until `deadline`), but each attempt's wait and each pause are
/// the loop's completions: a store that is not up yet holds nothing else up, and
/// `cancel` ends the wait at once (Error). Throws ConnectTimeout naming the store and
/// the last error at `deadline`. (Resolving the name is one blocking call each time.)
Task<net::Socket> connect_on_loop(std::string host, int port,
                                  std::chrono::steady_clock::time_point deadline,
                                  CancelSignal& cancel);

/// A wait for a store that may be long (its host is not up yet, or the address is
/// wrong), said on the console: a first line a few seconds in (kFirstAfter), then one
/// every kEvery, each "waiting for <what> at H:P (N s left, <bound_by>): <why>".
class ConnectWaitSaid {
 public:
  static constexpr std::chrono::seconds kFirstAfter{3};
  static constexpr std::chrono::seconds kEvery{30};
  ConnectWaitSaid(std::string what, std::string host, int port, std::string bound_by,
                  std::chrono::steady_clock::time_point deadline);
  /// When the next line is due: a try should end by then.
  std::chrono::steady_clock::time_point next_line() const { return say_at_; }
  /// A try failed with `why`: said where a line is due.
  void failed(const std::string& why);
  const std::string& host() const { return host_; }
  int port() const { return port_; }

 private:
  std::string what_;
  std::string host_;
  int port_;
  std::string bound_by_;
  std::chrono::steady_clock::time_point deadline_;
  std::chrono::steady_clock::time_point say_at_;
};

/// connect_on_loop() until `deadline`, the wait said as ConnectWaitSaid says it.
Task<net::Socket> connect_saying_why(std::string what, std::string host, int port,
                                     std::string bound_by,
                                     std::chrono::steady_clock::time_point deadline,
                                     CancelSignal& cancel);

/// Sends all of `bytes` on `socket` by `deadline`, waiting while the kernel takes no
/// more. TimeoutError (the socket closed: the request is half sent), StoreError where
/// the connection is lost.
Task<void> send_on_loop(net::Socket& socket, std::string bytes,
                        std::chrono::steady_clock::time_point deadline, CancelSignal& cancel);

}  // namespace ddprun::store
