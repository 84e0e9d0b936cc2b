#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "rendezvous/store.h"

namespace ddprun::agent {

/// Waits on a thread of its own (with its own store connection) until all `keys`
/// exist, then posts `on_ready(values)` to the agent's io_context, so the
/// single-threaded agent learns of other nodes' signals (stop, done) at once
/// without polling. Destroying it interrupts the wait and joins the thread; a
/// lost store posts `on_error(message)` instead.
class KeyWatch {
 public:
  using OnReady = std::function<void(std::vector<std::string>)>;
  using OnError = std::function<void(std::string)>;

  KeyWatch(boost::asio::io_context& io, std::unique_ptr<rendezvous::Store> store,
           std::vector<std::string> keys, OnReady on_ready, OnError on_error);
  ~KeyWatch();
  KeyWatch(const KeyWatch&) = delete;
  KeyWatch& operator=(const KeyWatch&) = delete;

 private:
  std::unique_ptr<rendezvous::Store> store_;
  std::shared_ptr<bool> alive_;  // guards posted callbacks against a destroyed owner
  std::thread thread_;
};

}  // namespace ddprun::agent
