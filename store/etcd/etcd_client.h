#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/cancel_signal.h"
#include "common/coro.h"
#include "net/socket.h"
#include "store/etcd/etcd_endpoint.h"
#include "store/store.h"

namespace ddprun::store {

/// etcd (or what answers at its address) refused a request for a reason another
/// try or another member will not change: a wrong API, a bad request.
class EtcdRefusedError : public StoreError {
 public:
  using StoreError::StoreError;
};

/// etcd answered that it wants credentials (ddprun does not log in).
class EtcdAuthError : public EtcdRefusedError {
 public:
  using EtcdRefusedError::EtcdRefusedError;
};

/// A watch asked for revisions etcd has compacted away.
class EtcdCompactedError : public EtcdRefusedError {
 public:
  using EtcdRefusedError::EtcdRefusedError;
};

struct EtcdKv {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
};

struct EtcdEvent {
  bool deleted = false;
  EtcdKv kv;
};

/// One operation of a transaction: a read of `key` (or [key, range_end)) or a put
/// (with `lease` when not 0).
struct EtcdOp {
  enum class Kind { kRange, kPut };
  Kind kind = Kind::kRange;
  std::string key;
  std::string range_end;   // ranges: empty for one key
  std::string value;       // puts
  int64_t lease = 0;       // puts
  bool keys_only = false;  // ranges: revisions without the values
  bool count_only = false;  // ranges: how many keys, nothing else

  static EtcdOp range(std::string key, std::string range_end = "", bool keys_only = false);
  /// How many keys [key, range_end) holds (Range::count), without them.
  static EtcdOp count(std::string key, std::string range_end);
  static EtcdOp put(std::string key, std::string value, int64_t lease = 0);
};

/// The condition of a transaction: `key`'s mod revision equals `mod_revision`
/// (0: the key does not exist).
struct EtcdCompare {
  std::string key;
  int64_t mod_revision = 0;
};

/// The key just after every key that starts with `prefix` (a range end for etcd).
std::string etcd_prefix_end(const std::string& prefix);

/// A client of etcd's v3 HTTP/JSON gateway (etcd 3.4+) over one connection at a time
/// to one of several endpoints: a call that cannot reach its endpoint, or that the
/// member cannot serve (no leader, shutting down), moves on to the next one until the
/// call's timeout, then fails naming every endpoint tried and why. Keys and values are
/// bytes (base64 on the wire).
///
/// Thread-safety: one call at a time; interrupt() may be called from any thread.
class EtcdClient {
 public:
  using Clock = std::chrono::steady_clock;

  EtcdClient(std::vector<EtcdEndpoint> endpoints, std::chrono::milliseconds timeout);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  /// One unary request: POST `path` with `body`; the decoded JSON reply.
  nlohmann::json call(const std::string& path, const nlohmann::json& body);

  struct Range {
    int64_t revision = 0;  // the store's revision the answer is from
    std::vector<EtcdKv> kvs;
    int64_t count = 0;
  };
  /// One key, or [key, range_end) when range_end is not empty.
  Range range(const std::string& key, const std::string& range_end = "", bool count_only = false);
  struct TxnResult {
    bool succeeded = true;
    int64_t revision = 0;       // the store's revision after the transaction
    std::vector<Range> ranges;  // one per range of the branch taken, in order
  };
  /// One transaction: `success` when `compare` holds (or when there is none), else
  /// `failure`. At most 128 operations per branch (etcd's default --max-txn-ops).
  TxnResult txn(const std::optional<EtcdCompare>& compare, const std::vector<EtcdOp>& success,
                const std::vector<EtcdOp>& failure = {});

  /// Several keys read at one revision.
  std::vector<Range> ranges(const std::vector<std::string>& keys);
  void put(const std::string& key, const std::string& value, int64_t lease = 0);
  /// Puts when the key's mod revision is `mod_revision` (0: when the key does not
  /// exist); false when it changed meanwhile. Either way `current` (if given) gets
  /// the key as it is now (nullopt: missing), from the same transaction.
  bool put_if_revision(const std::string& key, int64_t mod_revision, const std::string& value,
                       std::optional<EtcdKv>* current = nullptr);
  /// Number of keys deleted.
  int64_t remove(const std::string& key, const std::string& range_end = "");

  /// A lease of `ttl` seconds; keep_alive() renews it (false: it had expired), waiting
  /// for the answer up to `until` whatever the client's timeout (CallBudget::shared_until).
  int64_t grant_lease(int64_t ttl);
  bool keep_alive(int64_t lease, Clock::time_point until);

  /// Watches [key, range_end) from `start_revision` on, handing every event to
  /// `on_event` until it returns false (then true) or `deadline` passes (then false).
  /// A broken stream resumes on the next endpoint after the last revision seen. A
  /// stream silent for half the call timeout (1-10 s) proves nothing (a frozen member
  /// is silent too): one read, which fails over as any call does, hands on what
  /// changed meanwhile, and the watch resumes on the member that answered.
  /// Throws EtcdCompactedError when `start_revision` is compacted.
  bool watch(const std::string& key, const std::string& range_end, int64_t start_revision,
             Clock::time_point deadline, const std::function<bool(const EtcdEvent&)>& on_event);

  /// The same calls from a coroutine on a loop (etcd_loop_calls.cc), failing over
  /// alike, every wait (connecting, sending, the reply, the pause once every member
  /// failed) the loop's completion: nothing holds the loop up, and `cancel` ends a call
  /// at once (Error; the connection is dropped). `until`: where the caller's own wait
  /// ends before the call's timeout, the call gives up there.
  Task<nlohmann::json> call_on_loop(std::string path, nlohmann::json body, CancelSignal& cancel,
                                    Clock::time_point until = Clock::time_point::max());
  Task<Range> range_on_loop(std::string key, std::string range_end, CancelSignal& cancel);
  Task<std::vector<Range>> ranges_on_loop(std::vector<std::string> keys, CancelSignal& cancel,
                                          Clock::time_point until = Clock::time_point::max());
  Task<void> put_on_loop(std::string key, std::string value, CancelSignal& cancel);
  Task<TxnResult> txn_on_loop(std::optional<EtcdCompare> compare, std::vector<EtcdOp> success,
                              std::vector<EtcdOp> failure, CancelSignal& cancel,
                              Clock::time_point until = Clock::time_point::max());
  /// One transaction of reads only (ranges), at one revision.
  Task<TxnResult> reads_on_loop(std::vector<EtcdOp> reads, CancelSignal& cancel,
                                Clock::time_point until = Clock::time_point::max());
  /// grant_lease() on the loop.
  Task<int64_t> grant_lease_on_loop(int64_t ttl, CancelSignal& cancel);
  /// Revokes `lease` on the loop: the keys put under it go now.
  Task<void> revoke_lease_on_loop(int64_t lease, CancelSignal& cancel);
  /// remove() on the loop: the number of keys deleted.
  Task<int64_t> remove_on_loop(std::string key, std::string range_end, CancelSignal& cancel);
  /// put_if_revision() on the loop: what the key holds after (nullopt: missing) when
  /// the put was made, and nullopt itself when the key had changed.
  struct PutIfRevision {
    bool written = false;
    std::optional<EtcdKv> now;
  };
  Task<PutIfRevision> put_if_revision_on_loop(std::string key, int64_t mod_revision,
                                              std::string value, CancelSignal& cancel);

  /// watch() driven from an event loop, on a client that serves nothing else until
  /// end_loop_watch(). begin_loop_watch() only remembers what to watch. open_loop_watch()
  /// sends the request to the current member (on the open connection, else on a new
  /// one: one attempt of at most a second) and returns the descriptor to wait on; when
  /// it is readable, read_loop_watch() takes what arrived without blocking and hands
  /// each event to `on_event` until it returns false (then true). Where the stream
  /// breaks or ends, or the member cannot be reached, both throw StoreError having moved
  /// on to the next member: open_loop_watch() again resumes from the last revision
  /// seen. A stream silent for loop_watch_silence() proves nothing (a frozen member is
  /// silent too): skip_member() moves on to the next one. Throws EtcdRefusedError
  /// (EtcdCompactedError) as watch() does.
  void begin_loop_watch(const std::string& key, const std::string& range_end,
                        int64_t start_revision);
  Task<int> open_loop_watch(CancelSignal& cancel);
  bool read_loop_watch(const std::function<bool(const EtcdEvent&)>& on_event);
  std::chrono::milliseconds loop_watch_silence() const;
  void skip_member(const std::string& why) { fail_over(why); }
  void end_loop_watch();

  /// Makes a call blocked in another thread fail promptly; the client is unusable after.
  void interrupt();

  /// "h1:2379, h2:2379" for error messages.
  std::string endpoints_text() const;

  /// The Date header of the last reply ("" if it had none): the member's wall clock,
  /// in whole seconds.
  const std::string& last_date() const { return last_date_; }

 private:
  struct Response {
    unsigned status = 0;
    std::string body;
  };
  class CallBudget;  // etcd_wire.h
  struct Reply;      // etcd_wire.h
  nlohmann::json call(const std::string& path, const nlohmann::json& body, CallBudget budget);
  std::string request_text(const std::string& path, const std::string& body) const;
  // Gives `reply` what has been read (pending_): true once it is whole.
  bool take_pending(Reply& reply);
  Response finish(Reply& reply);
  // Throws the StoreError of a call that ran out of time, naming every member tried.
  // Fails a call whose budget of `spent` ran out, naming every member tried and why.
  [[noreturn]] void give_up(const std::string& path, std::chrono::milliseconds spent) const;
  // Adopts a new connection to the current member.
  void use(net::Socket connected);
  // Connects to the current member unless connected: one attempt, on the loop.
  Task<void> reach_on_loop(Clock::time_point deadline, CancelSignal& cancel);
  // One request and its reply on the current member, on the loop.
  Task<Response> exchange_on_loop(const std::string& path, const std::string& body,
                                  Clock::time_point deadline, CancelSignal& cancel);
  void connect(Clock::time_point deadline);
  void send_request(const std::string& path, const std::string& body, Clock::time_point deadline);
  Response read_response(Clock::time_point deadline);
  nlohmann::json decode(const std::string& path, const Response& r);
  void fail_over(const std::string& why);
  void drop_connection();
  // Sleeps `d` between attempts, or less where interrupt() is called meanwhile.
  void pause(std::chrono::milliseconds d);
  bool catch_up(const std::string& key, const std::string& range_end, int64_t& next,
                const std::function<bool(const EtcdEvent&)>& on_event);
  struct WatchStream;  // etcd_wire.h
  // Hands on every whole message of the stream's body read so far (and erases it); true
  // when `on_event` returned false. A message over kMaxBody is a StoreError.
  bool hand_on(WatchStream& w, const std::function<bool(const EtcdEvent&)>& on_event);
  // Sends the watch request on the current member's connection (made if needed) and
  // readies a new reply parser.
  void start_stream(WatchStream& w, Clock::time_point deadline);
  // Gives the parser what has been read (pending_): true once `on_event` returned false.
  // Throws StoreError for a malformed or ended stream, the decoded error for a refusal.
  bool feed_stream(WatchStream& w, const std::function<bool(const EtcdEvent&)>& on_event);

  std::vector<EtcdEndpoint> endpoints_;
  std::chrono::milliseconds timeout_;
  size_t current_ = 0;
  std::vector<std::string> last_errors_;  // per endpoint, for the final error
  std::mutex socket_mutex_;               // guards socket_ against interrupt()
  std::condition_variable interrupt_pause_;  // ends pause() at interrupt()
  net::Socket socket_;
  std::string pending_;  // bytes read past the last response
  std::string last_date_;  // see last_date()
  std::atomic<bool> interrupted_{false};
  std::unique_ptr<WatchStream> loop_watch_;                  // the event loop's
};

}  // namespace ddprun::store
