#pragma once

// Internal to the TCP store server: one client connection and the state all
// connections share. Everything here runs on the server's single io thread.

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include "store/key_value_table.h"
#include "store/tcpstore/tcp_store_decoder.h"

namespace ddprun::store::tcpstore {

class Session;

/// The store's data plus who waits for or watches which key.
class StoreState {
 public:
  KeyValueTable table;
  std::unordered_map<std::string, std::deque<std::string>> queues;

  bool exists(const std::string& key) const;
  /// A get's answer: the value, "" for none, the server's wall clock for
  /// kWallClockKey (which always exists). Valid until the next call or write.
  std::string_view read(const std::string& key);

  /// Registers `session` to be told STOP_WAITING once all missing `keys` exist.
  void add_wait(const std::shared_ptr<Session>& session, const std::vector<std::string>& keys);
  /// BARRIER: counts `session` in on `key` (an ADD of 1) and registers it to be told
  /// STOP_WAITING once the count reaches `members`, at once if it has. Throws
  /// KeyValueTable::NotANumber as ADD does.
  void add_to_barrier(const std::shared_ptr<Session>& session, const std::string& key,
                      int64_t members);
  /// Forgets the session's pending wait (for keys or at a barrier), if any.
  void cancel_wait(Session& session);
  void add_watch(const std::shared_ptr<Session>& session, const std::string& key);

  /// The value 1.13 watchers of `key` must be told was replaced (copied only when
  /// someone watches the key; nullopt otherwise or when the key is new).
  std::optional<std::string> watched_value(const std::string& key) const;
  /// After `key` was written: wakes its waiters and tells 1.13 watchers.
  void key_written(const std::string& key, const std::optional<std::string>& old_value);
  /// After `key` was deleted: tells watchers (waiters are not woken, as in PyTorch).
  void key_deleted(const std::string& key, const std::string& old_value);

  /// Requests answered, by operation (written on the server's thread, read anywhere).
  std::array<std::atomic<uint64_t>, kOpCount> requests{};

  /// Shared by all sessions for large reads: the server is single-threaded, so the
  /// reads that use it never overlap. Not zeroed: a store that never sees a large
  /// value never touches its pages.
  static constexpr size_t kReadBufferSize = 64 * 1024;
  std::unique_ptr<char[]> read_buffer = std::make_unique_for_overwrite<char[]>(kReadBufferSize);

 private:
  std::string clock_answer_;  // see read()
  struct Waiter {
    std::weak_ptr<Session> session;
    uint64_t generation;
    /// The session, where it still waits as it did when this entry was made; else null.
    std::shared_ptr<Session> live() const;
  };
  struct BarrierWaiter : Waiter {
    int64_t members;
  };
  /// A key's waiters. A cancelled wait's entry stays, stale by its generation, until
  /// the cancels since the last sweep could be half the list: a cancel costs O(1)
  /// amortized, not a scan of the key's every waiter (N clients leaving a key they all
  /// wait on cost N²: 16,000 took 2.4 s), and the list stays under twice its live
  /// entries.
  template <typename Entry>
  struct WaitList {
    std::vector<Entry> entries;
    size_t cancelled = 0;
  };
  template <typename Entry>
  static void forget_one(std::unordered_map<std::string, WaitList<Entry>>& lists,
                         const std::string& key);
  // Tells the waiters whose count `key` reached STOP_WAITING.
  void release_barrier(const std::string& key);

  std::unordered_map<std::string, WaitList<Waiter>> waiters_;
  std::unordered_map<std::string, WaitList<BarrierWaiter>> barriers_;
  std::unordered_map<std::string, std::vector<std::weak_ptr<Session>>> watchers_;
};

/// Whether the peer of the connected socket `fd` closed its end or reset it.
bool connection_gone(int fd);

/// One client connection. Kept alive by its pending asynchronous operations.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(boost::asio::ip::tcp::socket socket, StoreState& state);

  void start();
  void close();
  bool closed() const { return closed_; }
  /// Whether the client closed its end or reset it: a process that is gone, whatever
  /// it sent perhaps still unread.
  bool client_gone() { return connection_gone(socket_.native_handle()); }

  /// Queues reply bytes; closes the session when the client stops reading. Replies
  /// produced while handling one read go out in a single write.
  void send(const std::string& bytes);

  // Wait bookkeeping, owned by StoreState.
  uint64_t wait_generation = 0;
  size_t keys_awaited = 0;
  std::vector<std::string> awaited_keys;

 private:
  static constexpr size_t kMaxQueuedReplyBytes = 64 * 1024 * 1024;

  void read_more();
  void on_read(size_t n);
  void handle(Request& request);
  void handle_data_op(Request& r);
  void flush();

  boost::asio::ip::tcp::socket socket_;
  StoreState& state_;
  RequestDecoder decoder_;
  // Small on purpose: an idle connection costs little; a read that fills it is
  // continued through the shared buffer.
  std::array<char, 1024> read_buffer_;
  std::string pending_;    // replies not yet handed to the socket
  std::string in_flight_;  // the write under way
  bool writing_ = false;
  bool batching_ = false;  // handling a read: flush once at its end
  bool closed_ = false;
};

}  // namespace ddprun::store::tcpstore
