#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "store/loop_store.h"

namespace ddprun::rendezvous {

/// Reads keys of a store as they are now, from an event loop, on a connection of its
/// own that it keeps from one read to the next (the members' liveness, every heartbeat
/// interval). No thread: a coroutine on the loop (LoopStore::get_now). One read at a
/// time.
///
/// Destroying the reader cancels a read in progress; no callback comes after.
/// Single-threaded: the loop's thread only.
class KeyReader {
 public:
  using Values = std::vector<std::optional<std::string>>;
  /// The values (nullopt: not there), or nullopt where the read gave way to a stop
  /// signal (net::Interrupted): no fault of the store, to be read again later.
  using OnRead = std::function<void(std::optional<Values>)>;
  using OnError = std::function<void(std::string)>;

  KeyReader(boost::asio::io_context& io, std::unique_ptr<store::LoopStore> store);
  ~KeyReader();
  KeyReader(const KeyReader&) = delete;
  KeyReader& operator=(const KeyReader&) = delete;

  /// Reads `keys`, then calls `on_read` on the loop, or `on_error` with the store's
  /// error (a lost store, a call timeout), or with why not while a read is in progress.
  void read(std::vector<std::string> keys, OnRead on_read, OnError on_error);

 private:
  struct Reads;
  boost::asio::io_context& io_;
  std::shared_ptr<Reads> reads_;  // shared with a read still in progress
};

}  // namespace ddprun::rendezvous
