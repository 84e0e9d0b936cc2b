#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "store/loop_store.h"

namespace ddprun::rendezvous {

/// The quick requests a running round makes (the members' liveness every heartbeat
/// interval, what nodes publish and share, this node's end), on one connection of the
/// round's own, made by connect() or the first request (a store that cannot be reached
/// fails that request, like any other error) and kept from one request to the next.
/// No thread: each request is a coroutine on the loop (LoopStore), taken in the order
/// asked, one at a time; its callback comes on the loop once it is answered.
///
/// Where the connection fails, every request waiting fails with it at once, and every
/// later one: the round has lost its store (nothing reconnects to a store that is
/// gone, holding up the loop). Requests that pile up behind a store slow to answer are
/// refused past a bound (kMostWaiting): a read then reads nothing (to be read again
/// later), a write fails.
///
/// stop(), or destroying it, cancels the request in progress and drops those waiting;
/// no callback comes after, and a request asked after is dropped unsent. Single-
/// threaded: the loop's thread only.
class RoundRequests {
 public:
  using Values = std::vector<std::optional<std::string>>;
  /// The values (nullopt: not there), or nullopt where the read was refused: no fault
  /// of the store, to be read again later.
  using OnRead = std::function<void(std::optional<Values>)>;
  /// The store's error (a lost store, a call timeout), or why the request was refused.
  using OnError = std::function<void(std::string)>;
  using OnDone = std::function<void()>;

  /// At most this many requests wait behind the one in progress.
  static constexpr size_t kMostWaiting = 16;

  using Connect = std::function<std::unique_ptr<store::LoopStore>()>;
  RoundRequests(boost::asio::io_context& io, Connect connect);
  ~RoundRequests();
  RoundRequests(const RoundRequests&) = delete;
  RoundRequests& operator=(const RoundRequests&) = delete;

  /// Makes the connection now (as the first request, in turn) rather than with the
  /// first request: while the store is known to be up. A failure fails the requests
  /// after it.
  void connect();
  void stop();

  /// Reads `keys` as they are now.
  void read(std::vector<std::string> keys, OnRead on_read, OnError on_error);
  /// Sets `key`; `on_done` once the store has it.
  void write(std::string key, std::string value, OnDone on_done, OnError on_error);
  /// A request of the round made elsewhere (see run()).
  using Work = std::function<Task<void>(CancelSignal&)>;
  /// Counts this node at `counter` with its `mark` (LoopStore::count_in()); the count
  /// that reaches `last` also sets `reached`, after `before_reached` (where given; it
  /// fails the request where it throws). `on_done` once the store has what it was
  /// asked.
  void count_to(std::string counter, std::string mark, int64_t last, std::string reached,
                Work before_reached, OnDone on_done, OnError on_error);
  /// Raises the number at `key` to `mine` unless it is already as large (shared_max.h).
  void raise(std::string key, int64_t mine, OnError on_error);
  /// Sets `key` to `desired` where it holds `expected` ("": not there) and gives what it
  /// holds after. Its one answer always comes (unless stopped).
  using OnValue = std::function<void(std::string)>;
  void compare_set(std::string key, std::string expected, std::string desired, OnValue on_value,
                   OnError on_error);
  /// The same, `desired` made when the request's turn comes (from what the requests
  /// before it left).
  void compare_set(std::string key, std::string expected, std::function<std::string()> desired,
                   OnValue on_value, OnError on_error);
  /// Runs `work` in turn (a request of the round made elsewhere: the rendezvous state's,
  /// on the joiner's connection); never refused for the bound, as the next round may
  /// depend on it. Its failure (`on_error`, as compare_set()'s) leaves the round's
  /// connection as it was.
  void run(Work work, OnError on_error);
  /// Calls `on_settled` once every request asked before it has been answered (also
  /// where they failed, or were refused).
  void after_requests(OnDone on_settled);

 private:
  struct Queue;
  using Request = std::function<Task<void>(store::LoopStore&, CancelSignal&)>;
  using Answered = std::function<void(std::exception_ptr)>;
  void ask(Request request, Answered answered, bool bounded = true);
  static void next(boost::asio::io_context& io, const std::shared_ptr<Queue>& q);

  boost::asio::io_context& io_;
  std::shared_ptr<Queue> queue_;  // shared with the request in progress
};

}  // namespace ddprun::rendezvous
