#pragma once

// How the etcd client puts its requests into etcd's v3 JSON gateway and reads the
// replies: keys and values in base64, 64-bit integers as strings, streamed watch
// replies as JSON objects one after another. Internal to the etcd client.

#include <cstddef>
#include <cstdint>
#include <memory>
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
/// Where the first complete JSON object in `s` (from `from`) ends, or npos.
size_t json_object_end(const std::string& s, size_t from);
/// A transaction branch as the gateway takes it.
nlohmann::json txn_ops(const std::vector<EtcdOp>& ops);

}  // namespace ddprun::store::etcd_wire

namespace ddprun::store {

/// A watch stream: what it watches and how far it has read (the blocking watch() and
/// the event loop's alike).
struct EtcdClient::WatchStream {
  std::string key;
  std::string range_end;
  int64_t next = 0;  // the revision to resume from
  // This connection's reply; a new one on each connection.
  std::unique_ptr<boost::beast::http::response_parser<boost::beast::http::string_body>> parser;
};

}  // namespace ddprun::store
