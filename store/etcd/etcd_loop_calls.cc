#include <algorithm>
#include <utility>

#include "common/loop_waits.h"
#include "store/etcd/etcd_client.h"
#include "store/etcd/etcd_wire.h"
#include "store/loop_socket.h"

// EtcdClient's calls from a coroutine on a loop: the blocking calls' requests, replies
// and failing over (etcd_client.cc), with every wait the loop's completion.
namespace ddprun::store {

using namespace etcd_wire;
using Clock = EtcdClient::Clock;

Task<void> EtcdClient::reach_on_loop(Clock::time_point deadline, CancelSignal& cancel) {
  if (socket_.is_open()) co_return;
  const EtcdEndpoint& e = endpoints_[current_];
  auto until = std::min(deadline, Clock::now() + kConnectAttempt);
  net::Socket connected = co_await connect_on_loop(e.host, e.port, until, cancel);
  use(std::move(connected));
}

Task<EtcdClient::Response> EtcdClient::exchange_on_loop(const std::string& path,
                                                        const std::string& body,
                                                        Clock::time_point deadline,
                                                        CancelSignal& cancel) {
  try {
    co_await reach_on_loop(deadline, cancel);
    std::string request = request_text(path, body);
    co_await send_on_loop(socket_, std::move(request), deadline, cancel);
    Reply reply;
    char buffer[16384];
    while (!take_pending(reply)) {
      if (!co_await wait_readable(socket_.fd(), deadline, cancel)) {
        throw TimeoutError("timed out waiting for the reply of etcd at " +
                           endpoints_[current_].text());
      }
      size_t n = socket_.recv_available(buffer, sizeof(buffer));
      pending_.append(buffer, n);
    }
    co_return finish(reply);
  } catch (...) {
    drop_connection();  // whatever is left of the reply would be read as the next one's
    throw;
  }
}

Task<nlohmann::json> EtcdClient::call_on_loop(std::string path, nlohmann::json body,
                                              CancelSignal& cancel, Clock::time_point until) {
  CallBudget budget(timeout_, endpoints_.size(), until);
  std::string text = body.dump();
  while (true) {
    auto attempt_deadline = budget.attempt_deadline();
    std::string failure;
    try {
      Response r = co_await exchange_on_loop(path, text, attempt_deadline, cancel);
      if (r.status < 500) co_return decode(path, r);
      failure = "HTTP " + std::to_string(r.status) + " " + r.body.substr(0, 200);
    } catch (const EtcdRefusedError&) {
      throw;
    } catch (const StoreError& e) {
      failure = e.what();
    } catch (const TimeoutError& e) {
      failure = e.what();
    }
    fail_over(failure);
    if (budget.spent()) give_up(path, budget.length());
    auto pause = budget.pause_after_failure();
    if (pause.count() > 0) co_await sleep_for(pause, cancel);
  }
}

Task<EtcdClient::Range> EtcdClient::range_on_loop(std::string key, std::string range_end,
                                                  CancelSignal& cancel) {
  std::string path = "/v3/kv/range";
  nlohmann::json request = range_request(key, range_end, false);
  nlohmann::json reply = co_await call_on_loop(path, std::move(request), cancel);
  co_return to_range(reply);
}

Task<std::vector<EtcdClient::Range>> EtcdClient::ranges_on_loop(std::vector<std::string> keys,
                                                                CancelSignal& cancel,
                                                                Clock::time_point until) {
  std::vector<TxnResult> results;
  std::vector<std::vector<EtcdOp>> batches = range_batches(keys);
  for (auto& batch : batches) {
    TxnResult r = co_await reads_on_loop(std::move(batch), cancel, until);
    results.push_back(std::move(r));
  }
  co_return joined_ranges(std::move(results), keys.size(), "etcd at " + endpoints_text());
}

Task<void> EtcdClient::put_on_loop(std::string key, std::string value, CancelSignal& cancel) {
  std::string path = "/v3/kv/put";
  nlohmann::json request{{"key", b64(key)}, {"value", b64(value)}};
  co_await call_on_loop(path, std::move(request), cancel);
}

Task<EtcdClient::TxnResult> EtcdClient::txn_on_loop(std::optional<EtcdCompare> compare,
                                                    std::vector<EtcdOp> success,
                                                    std::vector<EtcdOp> failure,
                                                    CancelSignal& cancel, Clock::time_point until) {
  std::string path = "/v3/kv/txn";
  nlohmann::json request = txn_request(compare, success, failure);
  nlohmann::json reply = co_await call_on_loop(path, std::move(request), cancel, until);
  co_return txn_result("etcd at " + endpoints_[current_].text(), reply, compare.has_value(),
                       success, failure);
}

Task<int64_t> EtcdClient::grant_lease_on_loop(int64_t ttl, CancelSignal& cancel) {
  std::string path = "/v3/lease/grant";
  nlohmann::json request{{"TTL", std::to_string(ttl)}};
  nlohmann::json reply = co_await call_on_loop(path, std::move(request), cancel);
  int64_t id = int_field(reply, "ID");
  if (id == 0) throw StoreError("etcd at " + endpoints_text() + " granted no lease");
  co_return id;
}

Task<void> EtcdClient::revoke_lease_on_loop(int64_t lease, CancelSignal& cancel) {
  std::string path = "/v3/lease/revoke";
  nlohmann::json request{{"ID", std::to_string(lease)}};
  co_await call_on_loop(path, std::move(request), cancel);
}

Task<int64_t> EtcdClient::remove_on_loop(std::string key, std::string range_end,
                                         CancelSignal& cancel) {
  std::string path = "/v3/kv/deleterange";
  nlohmann::json request = range_request(key, range_end, false);
  nlohmann::json reply = co_await call_on_loop(path, std::move(request), cancel);
  co_return int_field(reply, "deleted");
}

Task<EtcdClient::TxnResult> EtcdClient::reads_on_loop(std::vector<EtcdOp> reads,
                                                      CancelSignal& cancel,
                                                      Clock::time_point until) {
  std::optional<EtcdCompare> always;
  std::vector<EtcdOp> none;
  co_return co_await txn_on_loop(always, std::move(reads), none, cancel, until);
}

Task<EtcdClient::PutIfRevision> EtcdClient::put_if_revision_on_loop(std::string key,
                                                                    int64_t mod_revision,
                                                                    std::string value,
                                                                    CancelSignal& cancel) {
  std::optional<EtcdCompare> compare = EtcdCompare{key, mod_revision};
  std::vector<EtcdOp> put(1, EtcdOp::put(key, value));
  std::vector<EtcdOp> read(1, EtcdOp::range(key));
  TxnResult r = co_await txn_on_loop(std::move(compare), std::move(put), std::move(read), cancel);
  co_return PutIfRevision{r.succeeded, key_after_put(r, key, value)};
}

Task<int> EtcdClient::open_loop_watch(CancelSignal& cancel) {
  if (interrupted_) throw StoreError("etcd client at " + endpoints_text() + " interrupted");
  WatchStream& w = *loop_watch_;
  auto deadline = Clock::now() + kConnectAttempt;
  try {
    // On the connection of the read before, if it is open: the member that answered.
    co_await reach_on_loop(deadline, cancel);
    std::string request = request_text("/v3/watch", watch_request(w.key, w.range_end, w.next));
    co_await send_on_loop(socket_, std::move(request), deadline, cancel);
  } catch (const StoreError& e) {
    fail_over(e.what());
    throw;
  } catch (const TimeoutError& e) {
    fail_over(e.what());
    throw StoreError(e.what());
  } catch (...) {
    drop_connection();
    throw;
  }
  w.new_reply();
  co_return socket_.fd();
}

}  // namespace ddprun::store
