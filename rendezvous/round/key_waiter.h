#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "store/loop_store.h"

namespace ddprun::rendezvous {

/// Waits until all `keys` of a store exist, from an event loop, then calls
/// `on_ready(values)` on the loop (no values where `read` is kNone: a caller that reads
/// them its own way); a lost store calls `on_error(message)` instead.
/// No thread: a coroutine on the loop, waiting as `store` does (LoopStore::wait_for).
///
/// `store` is a connection of the waiter's own. Destroying the waiter cancels the
/// wait; no callback comes after. Single-threaded: the loop's thread only.
class KeyWaiter {
 public:
  using OnReady = std::function<void(std::vector<std::string>)>;
  using OnError = std::function<void(std::string)>;

  enum class Read { kValues, kNone };

  KeyWaiter(boost::asio::io_context& io, std::unique_ptr<store::LoopStore> store,
            std::vector<std::string> keys, OnReady on_ready, OnError on_error,
            Read read = Read::kValues);
  ~KeyWaiter();
  KeyWaiter(const KeyWaiter&) = delete;
  KeyWaiter& operator=(const KeyWaiter&) = delete;

 private:
  struct Wait;
  std::shared_ptr<Wait> wait_;  // shared with completions still queued
};

}  // namespace ddprun::rendezvous
