#include "store/etcd/etcd_client.h"

#include <algorithm>

#include <spdlog/spdlog.h>
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "common/error.h"
#include "net/wait_scope.h"
#include "store/etcd/etcd_wire.h"

namespace ddprun::store {
namespace http = boost::beast::http;
using namespace etcd_wire;

namespace {

using Clock = EtcdClient::Clock;
constexpr auto kConnectAttempt = std::chrono::seconds(1);

}  // namespace

std::string etcd_prefix_end(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

EtcdClient::EtcdClient(std::vector<EtcdEndpoint> endpoints, std::chrono::milliseconds timeout)
    : endpoints_(std::move(endpoints)), timeout_(timeout), last_errors_(endpoints_.size()) {
  if (endpoints_.empty()) throw UsageError("--rdzv_endpoint: no etcd endpoint given");
}

EtcdClient::~EtcdClient() = default;

std::string EtcdClient::endpoints_text() const {
  std::string out;
  for (const auto& e : endpoints_) out += (out.empty() ? "" : ", ") + e.text();
  return out;
}

void EtcdClient::interrupt() {
  interrupted_ = true;
  std::lock_guard lock(socket_mutex_);
  socket_.shutdown();
}

void EtcdClient::drop_connection() {
  std::lock_guard lock(socket_mutex_);
  socket_.close();
  pending_.clear();
}

void EtcdClient::fail_over(const std::string& why) {
  last_errors_[current_] = why;
  drop_connection();
  current_ = (current_ + 1) % endpoints_.size();
}

void EtcdClient::connect(Clock::time_point deadline) {
  if (socket_.is_open()) return;
  const EtcdEndpoint& e = endpoints_[current_];
  net::Socket s =
      net::Socket::connect(e.host, e.port, std::min(deadline, Clock::now() + kConnectAttempt));
  std::lock_guard lock(socket_mutex_);
  socket_ = std::move(s);
  if (interrupted_) socket_.shutdown();
  pending_.clear();
}

void EtcdClient::send_request(const std::string& path, const std::string& body,
                              Clock::time_point deadline) {
  const EtcdEndpoint& e = endpoints_[current_];
  spdlog::trace("etcd {} {} {}", e.text(), path, body.substr(0, 300));
  std::string request =
      "POST " + path + " HTTP/1.1\r\nHost: " + e.text() +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n\r\n" + body;
  socket_.send_all(request.data(), request.size(), deadline);
}

EtcdClient::Response EtcdClient::read_response(Clock::time_point deadline) {
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxBody);
  char buf[16384];
  while (true) {
    if (!pending_.empty()) {
      boost::system::error_code ec;
      size_t used = parser.put(boost::asio::buffer(pending_), ec);
      pending_.erase(0, used);
      if (ec && ec != http::error::need_more) {
        throw StoreError("etcd at " + endpoints_[current_].text() +
                         " sent a malformed reply: " + ec.message());
      }
      if (parser.is_done()) break;
      if (used > 0 && !pending_.empty()) continue;
    }
    size_t n = socket_.recv_some(buf, sizeof(buf), deadline);
    pending_.append(buf, n);
  }
  if (!parser.keep_alive()) drop_connection();
  last_date_ = std::string(parser.get()[http::field::date]);
  return {parser.get().result_int(), std::move(parser.get().body())};
}

nlohmann::json EtcdClient::decode(const std::string& path, const Response& r) {
  std::string where = "etcd at " + endpoints_[current_].text();
  if (r.status == 404) {
    throw EtcdRefusedError(
        where + " does not serve " + path +
        " (HTTP 404): not etcd, or an etcd without the v3 JSON API (3.4 or later "
        "is needed)");
  }
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    throw EtcdRefusedError(where + " sent a reply to " + path + " that is not JSON (HTTP " +
                           std::to_string(r.status) + ")");
  }
  if (j.contains("error") || r.status >= 400) {
    auto [message, code] = read_reply(where, [&] {
      return std::pair{
          j.value("message", j.value("error", std::string("HTTP ") + std::to_string(r.status))),
          int_field(j, "code")};
    });
    bool auth = code == 16 || message.find("user name is empty") != std::string::npos ||
                message.find("auth") != std::string::npos ||
                message.find("token") != std::string::npos;
    if (auth) {
      throw EtcdAuthError(where + " requires authentication (" + message +
                          "); ddprun does not log in to etcd: give it an etcd without auth");
    }
    if (code == 14) throw StoreError(where + ": unavailable: " + message);  // try another
    throw EtcdRefusedError(where + ": " + path + " failed: " + message);
  }
  return j;
}

nlohmann::json EtcdClient::call(const std::string& path, const nlohmann::json& body) {
  auto deadline = Clock::now() + timeout_;
  auto per_attempt = std::clamp<std::chrono::milliseconds>(
      timeout_ / 3, std::chrono::milliseconds(500), std::chrono::seconds(10));
  if (single_attempt_) per_attempt = std::min(per_attempt, *single_attempt_);
  std::string text = body.dump();
  auto backoff = std::chrono::milliseconds(50);
  for (size_t attempt = 1;; ++attempt) {
    if (interrupted_) throw StoreError("etcd client at " + endpoints_text() + " interrupted");
    // One member may sit on a request it cannot finish (a follower whose leader
    // died drops the forwarded proposal and answers only after etcd's own request
    // timeout): give each attempt part of the budget, and the rest to the others.
    auto attempt_deadline = std::min(deadline, Clock::now() + per_attempt);
    try {
      connect(attempt_deadline);
      send_request(path, text, attempt_deadline);
      Response r = read_response(attempt_deadline);
      if (r.status < 500) return decode(path, r);
      fail_over("HTTP " + std::to_string(r.status) + " " + r.body.substr(0, 200));
    } catch (const EtcdRefusedError&) {
      throw;
    } catch (const StoreError& e) {
      if (interrupted_) throw StoreError("etcd client at " + endpoints_text() + " interrupted");
      fail_over(e.what());
    } catch (const TimeoutError& e) {
      if (interrupted_) throw StoreError("etcd client at " + endpoints_text() + " interrupted");
      fail_over(e.what());
    }
    if (single_attempt_) {
      size_t failed = (current_ + endpoints_.size() - 1) % endpoints_.size();  // moved on
      throw StoreError("etcd at " + endpoints_[failed].text() + ": " + last_errors_[failed]);
    }
    if (Clock::now() >= deadline) {
      std::string tried;
      for (size_t i = 0; i < endpoints_.size(); ++i) {
        tried += "\n  ";
        tried += endpoints_[i].text();
        tried += ": ";
        tried += last_errors_[i].empty() ? "not tried" : last_errors_[i];
      }
      std::string message = "cannot reach etcd (";
      message += path;
      message += ", ";
      message += std::to_string(static_cast<double>(timeout_.count()) / 1000.0).substr(0, 4);
      message += " s); tried:";
      message += tried;
      throw StoreError(message);
    }
    if (attempt % endpoints_.size() == 0) {  // every endpoint failed once: back off
      net::pause(std::min(
          backoff, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now())));
      backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
    }
  }
}

EtcdClient::Range EtcdClient::range(const std::string& key, const std::string& range_end,
                                    bool count_only) {
  nlohmann::json body{{"key", b64(key)}};
  if (!range_end.empty()) body["range_end"] = b64(range_end);
  if (count_only) body["count_only"] = true;
  return to_range(call("/v3/kv/range", body));
}

std::vector<EtcdClient::Range> EtcdClient::ranges(const std::vector<std::string>& keys) {
  constexpr size_t kBatch = 128;  // etcd's default limit of operations per transaction
  std::vector<Range> out;
  int64_t oldest = 0;
  for (size_t first = 0; first < keys.size(); first += kBatch) {
    std::vector<EtcdOp> ops;
    for (size_t i = first; i < std::min(keys.size(), first + kBatch); ++i) {
      ops.push_back(EtcdOp::range(keys[i]));
    }
    TxnResult r = txn(std::nullopt, ops);
    oldest = oldest == 0 ? r.revision : std::min(oldest, r.revision);
    for (auto& range : r.ranges) out.push_back(std::move(range));
  }
  if (out.size() != keys.size())
    throw StoreError("etcd at " + endpoints_text() + ": short txn reply");
  // The revision every key was read at or after: a watch from just after it misses nothing.
  for (auto& r : out) r.revision = oldest;
  return out;
}

void EtcdClient::put(const std::string& key, const std::string& value, int64_t lease) {
  nlohmann::json body{{"key", b64(key)}, {"value", b64(value)}};
  if (lease != 0) body["lease"] = std::to_string(lease);
  call("/v3/kv/put", body);
}

bool EtcdClient::put_if_revision(const std::string& key, int64_t mod_revision,
                                 const std::string& value, std::optional<EtcdKv>* current) {
  TxnResult r =
      txn(EtcdCompare{key, mod_revision}, {EtcdOp::put(key, value)}, {EtcdOp::range(key)});
  if (current != nullptr) {
    current->reset();
    if (r.succeeded) {
      // The put's revision is the transaction's: the key as it is now.
      *current = EtcdKv{key, value, 0, r.revision};
    } else if (!r.ranges.empty() && !r.ranges[0].kvs.empty()) {
      *current = r.ranges[0].kvs[0];
    }
  }
  return r.succeeded;
}

EtcdOp EtcdOp::range(std::string key, std::string range_end, bool keys_only) {
  return {Kind::kRange, std::move(key), std::move(range_end), "", 0, keys_only};
}

EtcdOp EtcdOp::put(std::string key, std::string value, int64_t lease) {
  return {Kind::kPut, std::move(key), "", std::move(value), lease, false};
}

EtcdClient::TxnResult EtcdClient::txn(const std::optional<EtcdCompare>& compare,
                                      const std::vector<EtcdOp>& success,
                                      const std::vector<EtcdOp>& failure) {
  nlohmann::json body{{"success", txn_ops(success)}};
  if (compare) {
    nlohmann::json c{{"key", b64(compare->key)}, {"result", "EQUAL"}};
    if (compare->mod_revision == 0) {
      c["target"] = "CREATE";
      c["create_revision"] = "0";
    } else {
      c["target"] = "MOD";
      c["mod_revision"] = std::to_string(compare->mod_revision);
    }
    body["compare"] = nlohmann::json::array({c});
    body["failure"] = txn_ops(failure);
  }
  auto reply = call("/v3/kv/txn", body);
  return read_reply("etcd at " + endpoints_[current_].text(), [&] {
    TxnResult r;
    r.succeeded = !compare || reply.value("succeeded", false);
    r.revision = int_field(reply.value("header", nlohmann::json::object()), "revision");
    const auto& taken = r.succeeded ? success : failure;
    auto responses = reply.value("responses", nlohmann::json::array());
    if (!responses.is_array())
      throw StoreError("malformed etcd reply: 'responses' is not an array");
    for (size_t i = 0; i < taken.size() && i < responses.size(); ++i) {
      if (taken[i].kind == EtcdOp::Kind::kRange) {
        r.ranges.push_back(
            to_range(responses[i].value("response_range", nlohmann::json::object())));
      }
    }
    return r;
  });
}

int64_t EtcdClient::remove(const std::string& key, const std::string& range_end) {
  nlohmann::json body{{"key", b64(key)}};
  if (!range_end.empty()) body["range_end"] = b64(range_end);
  return int_field(call("/v3/kv/deleterange", body), "deleted");
}

int64_t EtcdClient::grant_lease(int64_t ttl) {
  auto reply = call("/v3/lease/grant", {{"TTL", std::to_string(ttl)}});
  int64_t id = int_field(reply, "ID");
  if (id == 0) throw StoreError("etcd at " + endpoints_text() + " granted no lease");
  return id;
}

bool EtcdClient::keep_alive(int64_t lease) {
  auto reply = call("/v3/lease/keepalive", {{"ID", std::to_string(lease)}});
  return int_field(reply.value("result", nlohmann::json::object()), "TTL") > 0;
}

void EtcdClient::revoke_lease(int64_t lease) {
  call("/v3/lease/revoke", {{"ID", std::to_string(lease)}});
}

}  // namespace ddprun::store
