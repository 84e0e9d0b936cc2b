#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "rendezvous/store.h"

namespace ddprun::rendezvous {

/// Waits until all `keys` of a store exist, from an event loop, then calls
/// `on_ready(values)` on the loop; a lost store calls `on_error(message)` instead. A
/// request that gave way to a stop signal (net::Interrupted) ends the wait with
/// neither: the agent is stopping.
/// No thread: a coroutine on the loop. On a TCPStore the wait is the store's own WAIT
/// request, whose answer is a completion of the loop; on etcd a watch stream is read on
/// the loop as it arrives (moving on to the next member when it breaks or stays silent
/// too long); the in-process MemoryStore of unit tests is looked at every few ms.
///
/// `store` is a connection of the waiter's own. Destroying the waiter cancels the
/// wait; no callback comes after. Single-threaded: the loop's thread only.
class KeyWaiter {
 public:
  using OnReady = std::function<void(std::vector<std::string>)>;
  using OnError = std::function<void(std::string)>;

  KeyWaiter(boost::asio::io_context& io, std::unique_ptr<Store> store,
            std::vector<std::string> keys, OnReady on_ready, OnError on_error);
  ~KeyWaiter();
  KeyWaiter(const KeyWaiter&) = delete;
  KeyWaiter& operator=(const KeyWaiter&) = delete;

 private:
  struct Wait;
  std::shared_ptr<Wait> wait_;  // shared with completions still queued
};

}  // namespace ddprun::rendezvous
