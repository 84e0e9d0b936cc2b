#pragma once

// How the etcd client puts its requests into etcd's v3 JSON gateway and reads the
// replies: keys and values in base64, 64-bit integers as strings, streamed watch
// replies as JSON objects one after another. Internal to the etcd client.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "store/etcd/etcd_client.h"

namespace ddprun::store::etcd_wire {

/// The most a reply (or what a watch stream holds at once) may be.
constexpr size_t kMaxBody = 64u << 20;
/// The longest one attempt to connect to a member may take.
constexpr std::chrono::seconds kConnectAttempt{1};

std::string b64(const std::string& in);
std::string unb64(const std::string& in);
/// An integer field (the gateway writes 64-bit ones as strings and leaves out zeros).
/// The readers below throw StoreError ("malformed etcd reply: ...") for a reply of the
/// wrong shape: never a JSON library or std::stoll exception.
int64_t int_field(const nlohmann::json& j, const char* name);
EtcdKv to_kv(const nlohmann::json& j);
EtcdClient::Range to_range(const nlohmann::json& j);

/// Runs `read`, which interprets a reply from `where`: whatever a reply of the wrong
/// shape makes the JSON library or a number conversion throw becomes one StoreError.
template <typename F>
auto read_reply(const std::string& where, F read) {
  try {
    return read();
  } catch (const nlohmann::json::exception& e) {
    throw StoreError(where + " sent a malformed reply (" + e.what() + ")");
  } catch (const std::logic_error& e) {
    throw StoreError(where + " sent a malformed reply (" + e.what() + ")");
  }
}
/// How far a stream of JSON objects has been scanned for where its next object ends.
/// Kept between pieces of the stream, so that each byte is scanned once: a watch message
/// can be tens of MiB, and scanning it again from its start at every piece grew with
/// its square (29 s for one 25 MiB message at 4,096 simulated nodes).
struct JsonScan {
  size_t at = 0;  // the next byte to scan
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
};
/// Where the first complete JSON object in `s` from `scan.at` on ends, or npos while it
/// is not whole yet: `scan` then holds where the scan stopped, and a call with more
/// appended to `s` goes on from there.
size_t json_object_end(const std::string& s, JsonScan& scan);
/// A transaction branch as the gateway takes it.
nlohmann::json txn_ops(const std::vector<EtcdOp>& ops);
/// A transaction's request, and its reply read (from `where`).
nlohmann::json txn_request(const std::optional<EtcdCompare>& compare,
                           const std::vector<EtcdOp>& success, const std::vector<EtcdOp>& failure);
EtcdClient::TxnResult txn_result(const std::string& where, const nlohmann::json& reply,
                                 bool conditional, const std::vector<EtcdOp>& success,
                                 const std::vector<EtcdOp>& failure);
/// A watch's request: [key, range_end) from revision `next` on.
std::string watch_request(const std::string& key, const std::string& range_end, int64_t next);
/// A range's request.
nlohmann::json range_request(const std::string& key, const std::string& range_end,
                             bool count_only);
/// ranges(): the transactions that read `keys`, at most 128 reads each (etcd's default
/// --max-txn-ops).
std::vector<std::vector<EtcdOp>> range_batches(const std::vector<std::string>& keys);
/// ranges(): every key's range from the batches' results, each with the revision every
/// key was read at or after (a watch from just after it misses nothing).
std::vector<EtcdClient::Range> joined_ranges(std::vector<EtcdClient::TxnResult> results,
                                             size_t keys, const std::string& where);
/// put_if_revision(): what the key holds after the transaction.
std::optional<EtcdKv> key_after_put(const EtcdClient::TxnResult& r, const std::string& key,
                                    const std::string& value);

}  // namespace ddprun::store::etcd_wire

namespace ddprun::store {

/// The budget of one call: each attempt gets a share of the call's timeout (one member
/// may sit on a request it cannot finish: a follower whose leader died drops the
/// forwarded proposal and answers only after etcd's own request timeout), the rest
/// goes to the others; once every member failed, a pause (50 ms, doubling up to 1 s).
class EtcdClient::CallBudget {
 public:
  CallBudget(std::chrono::milliseconds timeout, size_t members,
             Clock::time_point until = Clock::time_point::max());
  /// A call worth its answer however late, up to `deadline` (a lease's renewal): each
  /// member an even share of the time left (at least 500 ms), one attempt each.
  static CallBudget shared_until(Clock::time_point deadline, size_t members);
  Clock::time_point attempt_deadline() const;
  bool spent() const { return Clock::now() >= deadline_; }
  /// The whole budget, as given (for the error once it is spent).
  std::chrono::milliseconds length() const { return length_; }
  /// After an attempt failed: how long to pause before the next (0: none).
  std::chrono::milliseconds pause_after_failure();

 private:
  std::chrono::milliseconds length_;
  Clock::time_point deadline_;
  std::chrono::milliseconds per_attempt_;
  size_t members_;
  size_t failed_ = 0;
  std::chrono::milliseconds backoff_{50};
};

/// A reply being read.
struct EtcdClient::Reply {
  Reply() { parser.body_limit(etcd_wire::kMaxBody); }
  boost::beast::http::response_parser<boost::beast::http::string_body> parser;
};

/// A watch stream: what it watches and how far it has read (the blocking watch() and
/// the event loop's alike).
struct EtcdClient::WatchStream {
  std::string key;
  std::string range_end;
  int64_t next = 0;  // the revision to resume from
  // This connection's reply; a new one on each connection. Its body holds what is not
  // handed on yet: at most one message, of at most kMaxBody (hand_on()), however long
  // the stream lasts.
  std::unique_ptr<boost::beast::http::response_parser<boost::beast::http::string_body>> parser;
  etcd_wire::JsonScan scan;  // of the body's first message

  void new_reply() {
    parser = std::make_unique<
        boost::beast::http::response_parser<boost::beast::http::string_body>>();
    parser->body_limit(boost::none);
    parser->eager(true);
    scan = {};
  }
};

}  // namespace ddprun::store
