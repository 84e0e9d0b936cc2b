#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/cancel_signal.h"
#include "common/coro.h"
#include "net/token_handout.h"
#include "store/key_value_table.h"

namespace ddprun::store {

/// A key-value server speaking PyTorch's TCPStore protocol (1.13 and 2.x clients,
/// told apart per connection), so real PyTorch workers can use it as their store.
/// Serves on its own thread and io_context (the agent that hosts it makes quick blocking
/// requests to it from its own loop, which would deadlock if both shared one thread;
/// and the workers are served whatever the agent is doing); server-side waits, no
/// polling. A malformed, oversized or truncated request closes only that connection.
///
/// Thread-safety: all public methods may be called from any thread.
class TcpStoreServer {
 public:
  /// Binds and starts serving. `host` "" listens dual-stack on "::" (or 0.0.0.0 where
  /// IPv6 is off); port 0 picks a free port (read it back with port()). Bind first,
  /// publish after: no other process can race for the port. Throws StoreError naming
  /// the address.
  /// With a `token`, a client is served only once it proved it (net/job_token.h): the
  /// agents' own channels. PyTorch's clients cannot, so the workers' store has none,
  /// or lets them in as `guests`.
  enum class Guests {
    kNone,     // only clients that proved the token
    kMembers,  // also clients from the address of one that did, this host or loopback:
               // a static job's store, which its agents and its workers share
  };
  /// With a `handout`, it also hands the token to nodes that ask with a credential
  /// (net/token_handout.h: a Slurm step whose token nobody gave).
  TcpStoreServer(const std::string& host, uint16_t port, std::string token = "",
                 Guests guests = Guests::kNone, net::TokenHandout handout = {});
  /// Stops serving and closes every connection.
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  uint16_t port() const;

  /// Stops serving now without waiting: the server's thread ends meanwhile, and the
  /// destructor only joins it and closes the connections. Nothing may be asked of the
  /// server after this.
  void stop();

  /// Deletes every key not starting with `keep_prefix` (a new attempt must not see
  /// the workers' keys of the previous one). First closes, unread, every connection
  /// whose client closed its end (a stopped worker's; those the kernel completed but
  /// nobody accepted yet too): what it sent and the store did not read yet must not
  /// land after the clear. Returns how many keys were deleted.
  size_t clear_except(const std::string& keep_prefix);
  /// Deletes every key starting with `prefix` (an agent's keys of a finished round).
  size_t erase_prefix(const std::string& prefix);
  /// Runs `edit` on the server's thread with its keys (waiters are not woken: for
  /// deleting what nobody waits for any more); returns what `edit` returns.
  size_t edit_keys(const std::function<size_t(KeyValueTable&)>& edit);

  /// Closes every client connection (the listener stays): clients of an earlier round
  /// (a dropped node's stale workers) fail at their next request instead of going on.
  /// Returns how many were closed.
  size_t close_connections();

  /// Until serve_held(), a new connection is accepted but not read (its client's
  /// connect succeeds; its first request waits). The connections already open are
  /// served as before, and those the kernel completed before this call count among
  /// them. A node's workers' store from its join until its round is known: the new
  /// round's workers, started by a faster member, are served only once the store was
  /// reset for them.
  void hold_new_connections();
  /// Serves the connections held since hold_new_connections(), and those that come
  /// after; a held one whose client has closed its end (a stopped worker's) is closed
  /// unread.
  void serve_held();

  /// From now on, admits connections only from these addresses and from 127.0.0.1 and
  /// ::1 (an IPv4 client of a dual-stack listener counts as its IPv4 address); every
  /// other is closed before a byte is read, its address logged once. The workers' store
  /// of a job with a token: PyTorch's clients cannot prove it, their nodes' addresses
  /// are what is left to check. Connections already open are not affected.
  void admit_only(const std::vector<std::string>& addresses);

  /// Open client connections (for tests, benchmarks and metrics).
  size_t connection_count();

  /// Requests answered so far, by operation name; operations never asked for are left
  /// out. Any thread.
  std::vector<std::pair<std::string, uint64_t>> request_counts() const;

  /// From a coroutine on a loop: until at most `n` clients are connected, `max` has
  /// passed or `cancel` fires, whichever comes first; never throws (the count looked
  /// at every few milliseconds, each pause the loop's completion: only at a job's end).
  Task<void> connections_at_most(size_t n, std::chrono::milliseconds max, CancelSignal& cancel);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ddprun::store
