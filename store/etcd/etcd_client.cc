#include "store/etcd/etcd_client.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include <spdlog/spdlog.h>
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "common/error.h"
#include "store/etcd/etcd_wire.h"

namespace ddprun::store {
namespace http = boost::beast::http;
using namespace etcd_wire;

namespace {

using Clock = EtcdClient::Clock;

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
  std::lock_guard lock(socket_mutex_);
  interrupted_ = true;
  socket_.shutdown();
  interrupt_pause_.notify_all();
}

void EtcdClient::pause(std::chrono::milliseconds d) {
  std::unique_lock lock(socket_mutex_);
  interrupt_pause_.wait_for(lock, d, [this] { return interrupted_.load(); });
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

void EtcdClient::use(net::Socket connected) {
  std::lock_guard lock(socket_mutex_);
  socket_ = std::move(connected);
  if (interrupted_) socket_.shutdown();
  pending_.clear();
}

void EtcdClient::connect(Clock::time_point deadline) {
  if (socket_.is_open()) return;
  const EtcdEndpoint& e = endpoints_[current_];
  use(net::Socket::connect(e.host, e.port, std::min(deadline, Clock::now() + kConnectAttempt)));
}

std::string EtcdClient::request_text(const std::string& path, const std::string& body) const {
  const EtcdEndpoint& e = endpoints_[current_];
  spdlog::trace("etcd {} {} {}", e.text(), path, body.substr(0, 300));
  return "POST " + path + " HTTP/1.1\r\nHost: " + e.text() +
         "\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

void EtcdClient::send_request(const std::string& path, const std::string& body,
                              Clock::time_point deadline) {
  std::string request = request_text(path, body);
  socket_.send_all(request.data(), request.size(), deadline);
}

bool EtcdClient::take_pending(Reply& reply) {
  while (!pending_.empty()) {
    boost::system::error_code ec;
    size_t used = reply.parser.put(boost::asio::buffer(pending_), ec);
    pending_.erase(0, used);
    if (ec && ec != http::error::need_more) {
      throw StoreError("etcd at " + endpoints_[current_].text() +
                       " sent a malformed reply: " + ec.message());
    }
    if (reply.parser.is_done()) return true;
    if (used == 0) break;
  }
  return false;
}

EtcdClient::Response EtcdClient::finish(Reply& reply) {
  auto& parser = reply.parser;
  if (!parser.keep_alive()) drop_connection();
  last_date_ = std::string(parser.get()[http::field::date]);
  return {parser.get().result_int(), std::move(parser.get().body())};
}

EtcdClient::Response EtcdClient::read_response(Clock::time_point deadline) {
  Reply reply;
  char buf[16384];
  while (!take_pending(reply)) {
    size_t n = socket_.recv_some(buf, sizeof(buf), deadline);
    pending_.append(buf, n);
  }
  return finish(reply);
}

nlohmann::json EtcdClient::decode(const std::string& path, const Response& r) {
  std::string where = "etcd at " + endpoints_[current_].text();
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  bool json = !j.is_discarded() && j.is_object();
  // The gateway answers some of etcd's own errors with 404 too (a lease not found),
  // with their gRPC status as JSON: only a 404 without one says the path is not served.
  if (r.status == 404 && !(json && j.contains("code"))) {
    throw EtcdRefusedError(
        where + " does not serve " + path +
        " (HTTP 404): not etcd, or an etcd without the v3 JSON API (3.4 or later "
        "is needed)");
  }
  if (!json) {
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

EtcdClient::CallBudget::CallBudget(std::chrono::milliseconds timeout, size_t members,
                                   Clock::time_point until)
    : length_(std::chrono::duration_cast<std::chrono::milliseconds>(
          std::min(Clock::now() + timeout, until) - Clock::now())),
      deadline_(std::min(Clock::now() + timeout, until)),
      per_attempt_(std::clamp<std::chrono::milliseconds>(timeout / 3, std::chrono::milliseconds(500),
                                                         std::chrono::seconds(10))),
      members_(members) {}

EtcdClient::CallBudget EtcdClient::CallBudget::shared_until(Clock::time_point deadline,
                                                             size_t members) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  CallBudget budget(left, members, deadline);
  budget.per_attempt_ = std::max<std::chrono::milliseconds>(
      left / static_cast<int64_t>(std::max<size_t>(members, 1)), std::chrono::milliseconds(500));
  return budget;
}

Clock::time_point EtcdClient::CallBudget::attempt_deadline() const {
  return std::min(deadline_, Clock::now() + per_attempt_);
}

std::chrono::milliseconds EtcdClient::CallBudget::pause_after_failure() {
  if (++failed_ % members_ != 0) return std::chrono::milliseconds(0);
  auto pause = std::min(
      backoff_, std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()));
  backoff_ = std::min(backoff_ * 2, std::chrono::milliseconds(1000));
  return std::max(pause, std::chrono::milliseconds(0));
}

void EtcdClient::give_up(const std::string& path, std::chrono::milliseconds spent) const {
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
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.1f s", static_cast<double>(spent.count()) / 1000.0);
  message += seconds;
  message += "); tried:";
  message += tried;
  throw StoreError(message);
}

nlohmann::json EtcdClient::call(const std::string& path, const nlohmann::json& body) {
  return call(path, body, CallBudget(timeout_, endpoints_.size()));
}

nlohmann::json EtcdClient::call(const std::string& path, const nlohmann::json& body,
                                CallBudget budget) {
  std::string text = body.dump();
  auto interrupted = [this] {
    return StoreError("etcd client at " + endpoints_text() + " interrupted");
  };
  while (true) {
    if (interrupted_) throw interrupted();
    auto attempt_deadline = budget.attempt_deadline();
    try {
      connect(attempt_deadline);
      send_request(path, text, attempt_deadline);
      Response r = read_response(attempt_deadline);
      if (r.status < 500) return decode(path, r);
      fail_over("HTTP " + std::to_string(r.status) + " " + r.body.substr(0, 200));
    } catch (const EtcdRefusedError&) {
      throw;
    } catch (const StoreError& e) {
      if (interrupted_) throw interrupted();
      fail_over(e.what());
    } catch (const TimeoutError& e) {
      if (interrupted_) throw interrupted();
      fail_over(e.what());
    }
    if (budget.spent()) give_up(path, budget.length());
    if (auto backoff = budget.pause_after_failure(); backoff.count() > 0) pause(backoff);
  }
}

EtcdClient::Range EtcdClient::range(const std::string& key, const std::string& range_end,
                                    bool count_only) {
  return to_range(call("/v3/kv/range", range_request(key, range_end, count_only)));
}

std::vector<EtcdClient::Range> EtcdClient::ranges(const std::vector<std::string>& keys) {
  std::vector<TxnResult> results;
  for (const auto& batch : range_batches(keys)) results.push_back(txn(std::nullopt, batch));
  return joined_ranges(std::move(results), keys.size(), "etcd at " + endpoints_text());
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
  if (current != nullptr) *current = key_after_put(r, key, value);
  return r.succeeded;
}

EtcdClient::TxnResult EtcdClient::txn(const std::optional<EtcdCompare>& compare,
                                      const std::vector<EtcdOp>& success,
                                      const std::vector<EtcdOp>& failure) {
  auto reply = call("/v3/kv/txn", txn_request(compare, success, failure));
  return txn_result("etcd at " + endpoints_[current_].text(), reply, compare.has_value(), success,
                    failure);
}

int64_t EtcdClient::remove(const std::string& key, const std::string& range_end) {
  return int_field(call("/v3/kv/deleterange", range_request(key, range_end, false)), "deleted");
}

int64_t EtcdClient::grant_lease(int64_t ttl) {
  auto reply = call("/v3/lease/grant", {{"TTL", std::to_string(ttl)}});
  int64_t id = int_field(reply, "ID");
  if (id == 0) throw StoreError("etcd at " + endpoints_text() + " granted no lease");
  return id;
}

bool EtcdClient::keep_alive(int64_t lease, Clock::time_point until) {
  auto reply = call("/v3/lease/keepalive", {{"ID", std::to_string(lease)}},
                    CallBudget::shared_until(until, endpoints_.size()));
  return int_field(reply.value("result", nlohmann::json::object()), "TTL") > 0;
}

}  // namespace ddprun::store
