#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rendezvous/join/generic_state_store.h"
#include "store/loop_store.h"
#include "store/store.h"
#include "store/tcpstore/tcp_store_server.h"

namespace ddprun::rendezvous {

/// `dir` + each member's name, in the members' order (their liveness keys).
inline std::vector<std::string> member_keys(const std::string& dir,
                                            const std::vector<std::string>& members) {
  std::vector<std::string> keys;
  keys.reserve(members.size());
  for (const auto& m : members) keys.push_back(dir + m);
  return keys;
}

/// Where an elastic rendezvous keeps its state and how its nodes show they are
/// alive: a TCPStore one of the agents hosts (c10d), or etcd.
class RendezvousBackend {
 public:
  virtual ~RendezvousBackend() = default;

  /// Prefix of the run's keys.
  virtual std::string prefix(const std::string& run_id) const = 0;
  /// A new connection to the state; every call bounded by `timeout`. `newer_than`
  /// (stores with revisions): every key its waits are for is newer than that.
  virtual std::unique_ptr<store::Store> connect(std::chrono::milliseconds timeout,
                                                int64_t newer_than) = 0;
  /// The same for the agent's loop, which waits on it (LoopStore).
  virtual std::unique_ptr<store::LoopStore> connect_on_loop(std::chrono::milliseconds timeout,
                                                            int64_t newer_than) = 0;
  /// Where the joiner keeps the state; `client` is a connection from connect().
  /// Called once, before start_liveness() (which may take the state's first read).
  virtual std::unique_ptr<StateStore> state_store(store::LoopStore& client,
                                                  const std::string& prefix,
                                                  std::chrono::milliseconds timeout) {
    (void)timeout;
    return std::make_unique<GenericStateStore>(client, prefix);
  }
  /// Starts showing that `node` is alive (until the backend goes). Awaited on the loop.
  virtual Task<void> start_liveness(std::string prefix, std::string node, CancelSignal& cancel) = 0;
  /// This node leaves on purpose: what shows it alive goes now (at the end of the job,
  /// awaited on the loop; errors are logged).
  virtual Task<void> leave(CancelSignal& cancel) {
    (void)cancel;
    co_return;
  }
  /// Whether `node` is the run's primary agent (its one tracking writer): the agent
  /// hosting the state, or where no agent does, the first to claim it (on `client`).
  /// Called once, after start_liveness(); awaited on the loop.
  virtual Task<bool> primary(store::LoopStore& client, std::string prefix, std::string node,
                             CancelSignal& cancel) {
    if (hosted()) co_return hosts_state();
    std::string key = prefix + "primary";
    std::string none;
    std::string held = co_await client.compare_set(key, none, node, cancel);
    co_return held == node;
  }
  /// The keys whose values show `members` alive, one each, read together every
  /// heartbeat interval (on the round's own connection, as the loop's completion).
  /// `members`: those this node watches (watched_members.h).
  virtual std::vector<std::string> liveness_keys(const std::string& prefix,
                                                 const std::vector<std::string>& members) = 0;
  /// Which of `members` (never `self`) are gone, judged now from what their liveness
  /// keys hold (`values`, in the same order; nullopt: not there).
  virtual std::vector<std::string> dead_members(
      const std::vector<std::string>& members,
      const std::vector<std::optional<std::string>>& values, const std::string& self) = 0;
  /// A round has formed: every member counts as alive from here.
  virtual void round_formed() {}
  /// Round `round` has formed: the keys only earlier rounds needed go
  /// (round_history.h), so that restarts do not grow the state. `first_member`: this
  /// node is the round's group rank 0. Best effort: a failure only leaves them.
  /// Awaited on the loop.
  virtual Task<void> forget_history(std::string prefix, int round, bool first_member,
                                    CancelSignal& cancel) = 0;
  /// The state's server where this agent hosts it, for metrics (null elsewhere).
  virtual store::TcpStoreServer* server() { return nullptr; }
  /// True when one of the agents hosts the state (c10d), false for a service (etcd).
  virtual bool hosted() const { return false; }
  /// True on the agent that hosts the state (it must outlive the job).
  virtual bool hosts_state() const { return false; }
  /// On the host, at the end: waits until the others let go, at most `max` or until
  /// `cancel` fires; never throws. Awaited on the loop.
  virtual Task<void> linger(std::chrono::milliseconds max, CancelSignal& cancel) {
    (void)max;
    (void)cancel;
    co_return;
  }
  /// On the host of a job no other node joins (a single node's), once it is over: the
  /// state's server stops now, and ends while the agent ends the rest.
  virtual void stop_serving() {}
  /// How far the wall clock of the state's host is ahead of this node's (negative:
  /// behind), by one request on `client` (see host_clock.h), awaited on the loop;
  /// nullopt where it cannot be told.
  virtual Task<std::optional<std::chrono::milliseconds>> clock_offset(store::LoopStore& client,
                                                                      CancelSignal& cancel) {
    (void)client;
    (void)cancel;
    co_return std::nullopt;
  }
  /// Where the state lives, for messages: "h:p", or etcd's "a, b".
  virtual std::string endpoint() const = 0;
  /// The same with what it is: "store at h:p", "etcd at a, b".
  virtual std::string where() const = 0;
};

}  // namespace ddprun::rendezvous
