#include "store/etcd/etcd_client.h"

#include <algorithm>

#include <spdlog/spdlog.h>
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "net/socket.h"
#include "store/etcd/etcd_wire.h"

// The watch stream: one long HTTP reply of JSON objects, resumed on the next member
// after the last revision seen when it breaks.
namespace ddprun::store {

using namespace etcd_wire;
namespace http = boost::beast::http;

using Parser = http::response_parser<http::string_body>;

std::chrono::milliseconds EtcdClient::loop_watch_silence() const {
  return std::clamp<std::chrono::milliseconds>(timeout_ / 2, std::chrono::milliseconds(1000),
                                               std::chrono::milliseconds(10'000));
}

bool EtcdClient::hand_on(WatchStream& w, const std::function<bool(const EtcdEvent&)>& on_event) {
  std::string& body = w.parser->get().body();
  size_t end;
  while ((end = json_object_end(body, w.scan)) != std::string::npos) {
    // What follows a message is at most one read's worth: erasing it from the front is cheap.
    auto message = nlohmann::json::parse(body.substr(0, end), nullptr, false);
    body.erase(0, end);
    w.scan = {};
    if (message.is_object() && message.contains("error")) {
      decode("/v3/watch", {500, message.dump()});
    }
    auto events = read_reply("etcd at " + endpoints_[current_].text(), [&] {
      auto result = message.value("result", nlohmann::json::object());
      if (result.value("canceled", false)) {
        if (int_field(result, "compact_revision") > 0) {
          throw EtcdCompactedError("etcd at " + endpoints_[current_].text() +
                                   " has compacted revision " + std::to_string(w.next));
        }
        throw StoreError("etcd canceled the watch on " + w.key + ": " +
                         result.value("cancel_reason", std::string("compacted")));
      }
      std::vector<EtcdEvent> out;
      for (const auto& ev : result.value("events", nlohmann::json::array())) {
        EtcdEvent event;
        event.deleted = ev.value("type", "") == "DELETE";
        event.kv = to_kv(ev.value("kv", nlohmann::json::object()));
        out.push_back(std::move(event));
      }
      return out;
    });
    for (const auto& event : events) {
      w.next = std::max(w.next, event.kv.mod_revision + 1);
      if (!on_event(event)) return true;
    }
  }
  if (body.size() > kMaxBody) {
    throw StoreError("etcd at " + endpoints_[current_].text() + " sent a watch message over " +
                     std::to_string(kMaxBody >> 20) + " MiB");
  }
  return false;
}

void EtcdClient::start_stream(WatchStream& w, Clock::time_point deadline) {
  connect(deadline);
  send_request("/v3/watch", watch_request(w.key, w.range_end, w.next), deadline);
  w.new_reply();
}

bool EtcdClient::feed_stream(WatchStream& w,
                             const std::function<bool(const EtcdEvent&)>& on_event) {
  Parser& parser = *w.parser;
  boost::system::error_code ec;
  size_t used = parser.put(boost::asio::buffer(pending_), ec);
  pending_.erase(0, used);
  if (ec && ec != http::error::need_more) {
    throw StoreError("malformed watch stream: " + ec.message());
  }
  if (!parser.is_header_done()) return false;
  if (parser.get().result_int() != 200) {
    // Not a stream: the whole error reply, decoded (404, auth, ...).
    if (parser.get().body().size() > kMaxBody) {
      throw StoreError("etcd at " + endpoints_[current_].text() +
                       " answered the watch with an error reply over " +
                       std::to_string(kMaxBody >> 20) + " MiB");
    }
    if (!parser.is_done()) return false;
    decode("/v3/watch", {parser.get().result_int(), parser.get().body()});
    throw StoreError("etcd at " + endpoints_[current_].text() + " refused the watch");
  }
  if (hand_on(w, on_event)) return true;
  if (parser.is_done()) throw StoreError("the watch stream ended");
  return false;
}

bool EtcdClient::watch(const std::string& key, const std::string& range_end, int64_t start_revision,
                       Clock::time_point deadline,
                       const std::function<bool(const EtcdEvent&)>& on_event) {
  WatchStream w{key, range_end, start_revision, nullptr, {}};
  const auto silence = loop_watch_silence();
  while (true) {
    if (interrupted_) throw StoreError("etcd client at " + endpoints_text() + " interrupted");
    // A healthy stream with nothing to say is silent, and so is a frozen member's: after
    // `silence` without a byte, one read (failing over as any call does) tells them apart.
    auto quiet_until = [&] { return std::min(deadline, Clock::now() + silence); };
    try {
      start_stream(w, quiet_until());
      char buf[16384];
      do {
        size_t n = socket_.recv_some(buf, sizeof(buf), quiet_until());
        pending_.append(buf, n);
      } while (!feed_stream(w, on_event));
      drop_connection();  // the stream stays open server-side
      return true;
    } catch (const TimeoutError& e) {
      drop_connection();
      spdlog::debug("etcd watch on {}: {}; reading instead", key, e.what());
      if (catch_up(key, range_end, w.next, on_event)) return true;
      if (Clock::now() >= deadline) return false;
      // Watch again from `next`, on whichever member answered the read.
    } catch (const EtcdRefusedError&) {
      throw;
    } catch (const StoreError& e) {
      if (interrupted_) throw StoreError("etcd client at " + endpoints_text() + " interrupted");
      spdlog::debug("etcd watch on {} broke ({}); resuming from revision {}", key, e.what(),
                    w.next);
      fail_over(e.what());
      if (Clock::now() >= deadline) return catch_up(key, range_end, w.next, on_event);
    }
  }
}

// What a silent watch may have missed, read once: each key changed since `next` as an
// event, `next` moved past it (deletions cannot be seen this way; the callers read
// again after a change).
bool EtcdClient::catch_up(const std::string& key, const std::string& range_end, int64_t& next,
                          const std::function<bool(const EtcdEvent&)>& on_event) {
  for (const EtcdKv& kv : range(key, range_end).kvs) {
    if (kv.mod_revision < next) continue;
    next = std::max(next, kv.mod_revision + 1);
    EtcdEvent event;
    event.kv = kv;
    if (!on_event(event)) return true;
  }
  return false;
}

void EtcdClient::begin_loop_watch(const std::string& key, const std::string& range_end,
                                  int64_t start_revision) {
  loop_watch_ =
      std::make_unique<WatchStream>(WatchStream{key, range_end, start_revision, nullptr, {}});
}

bool EtcdClient::read_loop_watch(const std::function<bool(const EtcdEvent&)>& on_event) {
  WatchStream& w = *loop_watch_;
  char buf[16384];
  try {
    while (true) {
      size_t n = socket_.recv_available(buf, sizeof(buf));
      if (n == 0) return false;  // all that arrived is read
      pending_.append(buf, n);
      if (feed_stream(w, on_event)) {
        drop_connection();  // the stream stays open server-side
        return true;
      }
    }
  } catch (const EtcdRefusedError&) {
    drop_connection();
    throw;
  } catch (const StoreError& e) {
    spdlog::debug("etcd watch on {} broke ({}); resuming from revision {}", w.key, e.what(),
                  w.next);
    fail_over(e.what());
    throw;
  }
}

void EtcdClient::end_loop_watch() {
  drop_connection();
  loop_watch_.reset();
}

}  // namespace ddprun::store
