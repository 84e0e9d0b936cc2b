#include "store/tcpstore/tcp_store_session.h"

#include <poll.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstring>
#include <string_view>
#include <unordered_set>

#include <spdlog/spdlog.h>
#include <boost/asio/write.hpp>

namespace ddprun::store::tcpstore {
namespace {

template <typename T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(value));
}

void put_bytes(std::string& out, std::string_view bytes) {
  put<uint64_t>(out, bytes.size());
  out += bytes;
}

std::string watch_event(WatchEvent type, const std::string& key, const std::string& old_value,
                        const std::string& new_value) {
  std::string out;
  put(out, static_cast<uint8_t>(type));
  put_bytes(out, key);
  put_bytes(out, old_value);
  put_bytes(out, new_value);
  return out;
}

}  // namespace

// ---- StoreState ----

bool StoreState::exists(const std::string& key) const {
  if (table.contains(key) || key == kWallClockKey) return true;
  auto q = queues.find(key);
  return q != queues.end() && !q->second.empty();
}

std::string_view StoreState::read(const std::string& key) {
  if (key == kWallClockKey) {
    clock_answer_ = std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                       std::chrono::system_clock::now().time_since_epoch())
                                       .count());
    return clock_answer_;
  }
  const std::string* v = table.find(key);
  return v ? std::string_view(*v) : std::string_view();
}

void StoreState::add_wait(const std::shared_ptr<Session>& session,
                          const std::vector<std::string>& keys) {
  cancel_wait(*session);
  std::unordered_set<std::string_view> awaited;  // a key named twice is awaited once
  for (const auto& k : keys) {
    if (exists(k) || !awaited.insert(k).second) continue;
    session->awaited_keys.push_back(k);
    waiters_[k].entries.push_back({session, session->wait_generation});
  }
  session->keys_awaited = session->awaited_keys.size();
  if (session->keys_awaited == 0) session->send(std::string(1, char(kStopWaiting)));
}

void StoreState::add_to_barrier(const std::shared_ptr<Session>& session, const std::string& key,
                                int64_t members) {
  cancel_wait(*session);
  auto old = watched_value(key);
  int64_t count = table.add(key, 1);
  if (count < members) {
    session->awaited_keys.push_back(key);
    session->keys_awaited = 1;
    barriers_[key].entries.push_back({{session, session->wait_generation}, members});
  } else {
    session->send(std::string(1, char(kStopWaiting)));
  }
  key_written(key, old);
}

void StoreState::release_barrier(const std::string& key) {
  if (barriers_.empty()) return;  // every write comes here
  auto it = barriers_.find(key);
  const std::string* value = it == barriers_.end() ? nullptr : table.find(key);
  int64_t count = 0;
  if (!value ||
      std::from_chars(value->data(), value->data() + value->size(), count).ec != std::errc{}) {
    return;
  }
  auto& list = it->second;
  std::erase_if(list.entries, [&](const BarrierWaiter& w) {
    auto s = w.live();
    if (!s) return true;
    if (count < w.members) return false;
    s->keys_awaited = 0;
    s->awaited_keys.clear();
    s->send(std::string(1, char(kStopWaiting)));
    return true;
  });
  list.cancelled = 0;  // every stale entry went
  if (list.entries.empty()) barriers_.erase(it);
}

std::shared_ptr<Session> StoreState::Waiter::live() const {
  auto s = session.lock();
  bool waits = s && !s->closed() && s->wait_generation == generation && s->keys_awaited != 0;
  return waits ? s : nullptr;
}

template <typename Entry>
void StoreState::forget_one(std::unordered_map<std::string, WaitList<Entry>>& lists,
                            const std::string& key) {
  auto it = lists.find(key);
  if (it == lists.end()) return;
  auto& list = it->second;
  if (++list.cancelled * 2 < list.entries.size()) return;
  std::erase_if(list.entries, [](const Entry& e) { return !e.live(); });
  list.cancelled = 0;
  if (list.entries.empty()) lists.erase(it);
}

void StoreState::cancel_wait(Session& session) {
  // The new generation makes the session's entries stale where they stand; each
  // key's list is swept of them in its own time (WaitList).
  ++session.wait_generation;
  for (const auto& k : session.awaited_keys) {
    forget_one(barriers_, k);
    forget_one(waiters_, k);
  }
  session.awaited_keys.clear();
  session.keys_awaited = 0;
}

void StoreState::add_watch(const std::shared_ptr<Session>& session, const std::string& key) {
  watchers_[key].push_back(session);
}

std::optional<std::string> StoreState::watched_value(const std::string& key) const {
  if (!watchers_.count(key)) return std::nullopt;
  const std::string* v = table.find(key);
  return v ? std::optional<std::string>(*v) : std::nullopt;
}

void StoreState::key_written(const std::string& key, const std::optional<std::string>& old_value) {
  release_barrier(key);
  if (auto it = waiters_.find(key); it != waiters_.end()) {
    std::vector<Waiter> woken = std::move(it->second.entries);
    waiters_.erase(it);
    for (const auto& w : woken) {
      auto s = w.live();
      if (!s) continue;
      if (--s->keys_awaited == 0) {
        s->awaited_keys.clear();
        s->send(std::string(1, char(kStopWaiting)));
      }
    }
  }
  if (auto it = watchers_.find(key); it != watchers_.end()) {
    const std::string* now = table.find(key);
    std::string event = watch_event(old_value ? WatchEvent::kUpdated : WatchEvent::kCreated, key,
                                    old_value.value_or(""), now ? *now : "");
    auto& list = it->second;
    std::erase_if(list, [](const auto& w) { return w.expired(); });
    for (const auto& w : list)
      if (auto s = w.lock()) s->send(event);
  }
}

void StoreState::key_deleted(const std::string& key, const std::string& old_value) {
  auto it = watchers_.find(key);
  if (it == watchers_.end()) return;
  std::string event = watch_event(WatchEvent::kDeleted, key, old_value, "");
  for (const auto& w : it->second)
    if (auto s = w.lock()) s->send(event);
}

bool connection_gone(int fd) {
  pollfd p{fd, POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

// ---- Session ----

Session::Session(boost::asio::ip::tcp::socket socket, StoreState& state)
    : socket_(std::move(socket)), state_(state) {
  boost::system::error_code ignored;
  socket_.set_option(boost::asio::ip::tcp::no_delay(true), ignored);
  socket_.non_blocking(true, ignored);
}

void Session::start() { read_more(); }

void Session::close() {
  if (closed_) return;
  closed_ = true;
  state_.cancel_wait(*this);
  boost::system::error_code ignored;
  socket_.close(ignored);
}

// async_read_some: Asio reads before it waits, so a request costs its read, its reply's
// write and a read that finds nothing. That last read is also what finds a close that
// came with the request's bytes: the edge-triggered epoll told of both at once, and
// none follows. (A wait for readability in its place costs the same, an epoll_ctl
// that looks again; Boost 1.74's Asio takes only the end of the stream, not a short
// read, for a drained socket.)
void Session::read_more() {
  socket_.async_read_some(
      boost::asio::buffer(read_buffer_),
      [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
        if (ec || self->closed_) return self->close();
        self->on_read(n);
      });
}

void Session::on_read(size_t n) {
  decoder_.feed(read_buffer_.data(), n);
  if (n == read_buffer_.size()) {
    // More may be waiting (a large value): take it through the shared buffer.
    char* buf = state_.read_buffer.get();
    while (true) {
      boost::system::error_code ec;
      size_t got = socket_.read_some(boost::asio::buffer(buf, StoreState::kReadBufferSize), ec);
      if (ec == boost::asio::error::would_block) break;
      if (ec) return close();
      decoder_.feed(buf, got);
      if (got < StoreState::kReadBufferSize) break;
    }
  }
  Request request;
  RequestDecoder::Status status = RequestDecoder::Status::kNeedMore;
  batching_ = true;
  while (!closed_ && (status = decoder_.next(request)) == RequestDecoder::Status::kReady) {
    handle(request);
  }
  batching_ = false;
  if (status == RequestDecoder::Status::kBad) {
    spdlog::debug("store: closing a connection: {}", decoder_.error());
    return close();
  }
  decoder_.release_decoded();
  flush();
  if (!closed_) read_more();
}

void Session::send(const std::string& bytes) {
  if (closed_) return;
  if (pending_.size() + in_flight_.size() + bytes.size() > kMaxQueuedReplyBytes) {
    spdlog::debug("store: closing a connection that does not read its replies");
    return close();
  }
  pending_ += bytes;
  if (!batching_) flush();
}

void Session::flush() {
  if (writing_ || pending_.empty() || closed_) return;
  writing_ = true;
  in_flight_.swap(pending_);
  pending_.clear();
  boost::asio::async_write(
      socket_, boost::asio::buffer(in_flight_),
      [self = shared_from_this()](const boost::system::error_code& ec, size_t) {
        self->writing_ = false;
        self->in_flight_.clear();
        if (self->in_flight_.capacity() > kKeptBufferBytes) std::string().swap(self->in_flight_);
        if (ec) return self->close();
        self->flush();
      });
}

void Session::handle(Request& r) {
  // A request while a WAIT is pending means the client gave up on it (1.13 never
  // sends CANCEL_WAIT): drop it silently so a late STOP_WAITING cannot corrupt the
  // reply the client is now expecting.
  if (keys_awaited > 0 && r.op != Op::kCancelWait) state_.cancel_wait(*this);
  if (static_cast<size_t>(r.op) < kOpCount) {
    state_.requests[static_cast<size_t>(r.op)].fetch_add(1, std::memory_order_relaxed);
  }
  std::string out;
  switch (r.op) {
    case Op::kValidate:
      return;
    case Op::kPing:
      put(out, r.u32);
      break;
    case Op::kWait:
      return state_.add_wait(shared_from_this(), r.keys);
    case Op::kBarrier:
      try {
        return state_.add_to_barrier(shared_from_this(), r.keys[0], r.delta);
      } catch (const KeyValueTable::NotANumber&) {
        spdlog::debug("store: BARRIER on a non-numeric value of '{}'", r.keys[0]);
        return close();
      }
    case Op::kCancelWait:
      state_.cancel_wait(*this);
      put(out, kWaitCanceled);
      break;
    case Op::kWatchKey:
      state_.add_watch(shared_from_this(), r.keys[0]);
      put(out, static_cast<uint8_t>(WatchEvent::kRegistered));
      break;
    case Op::kCheck:
      put(out, std::all_of(r.keys.begin(), r.keys.end(),
                           [this](const auto& k) { return state_.exists(k); })
                   ? kCheckReady
                   : kCheckNotReady);
      break;
    case Op::kGetNumKeys:
      put<int64_t>(out, state_.table.size());
      break;
    case Op::kList: {
      std::vector<std::string> keys;
      state_.table.for_each_key([&](const std::string& k) { keys.push_back(k); });
      put<int64_t>(out, static_cast<int64_t>(keys.size()));
      for (const auto& k : keys) put_bytes(out, k);
      break;
    }
    default:
      return handle_data_op(r);
  }
  send(out);
}

// Operations that read or write values.
void Session::handle_data_op(Request& r) {
  std::string out;
  const std::string& key = r.keys.empty() ? out : r.keys[0];
  switch (r.op) {
    case Op::kSet:
    case Op::kAppend: {
      auto old = state_.watched_value(key);
      if (r.op == Op::kSet)
        state_.table.set(key, std::move(r.values[0]));
      else
        state_.table.append(key, r.values[0]);
      state_.key_written(key, old);
      return;
    }
    case Op::kMultiSet:
      for (size_t i = 0; i < r.keys.size(); ++i) {
        auto old = state_.watched_value(r.keys[i]);
        state_.table.set(r.keys[i], std::move(r.values[i]));
        state_.key_written(r.keys[i], old);
      }
      return;
    case Op::kCompareSet: {
      auto old = state_.watched_value(key);
      auto result = state_.table.compare_set(key, r.values[0], r.values[1]);
      put_bytes(out, result.reply);
      send(out);
      if (result.written) state_.key_written(key, old);
      return;
    }
    case Op::kGet:
      put_bytes(out, state_.read(key));
      break;
    case Op::kMultiGet:
      for (const auto& k : r.keys) put_bytes(out, state_.read(k));
      break;
    case Op::kAdd: {
      auto old = state_.watched_value(key);
      try {
        put<int64_t>(out, state_.table.add(key, r.delta));
      } catch (const KeyValueTable::NotANumber&) {
        spdlog::debug("store: ADD to a non-numeric value of '{}'", key);
        return close();
      }
      send(out);
      state_.key_written(key, old);
      return;
    }
    case Op::kDeleteKey: {
      auto old = state_.watched_value(key);
      bool erased = state_.table.erase(key);
      put<int64_t>(out, erased ? 1 : 0);
      send(out);
      if (erased) state_.key_deleted(key, old.value_or(""));
      return;
    }
    case Op::kQueuePush:
      state_.queues[key].push_back(std::move(r.values[0]));
      state_.key_written(key, std::nullopt);
      return;
    case Op::kQueuePop: {
      auto& q = state_.queues[key];
      put<int64_t>(out, static_cast<int64_t>(q.size()));
      if (!q.empty()) {
        put_bytes(out, q.front());
        q.pop_front();
      }
      if (q.empty()) state_.queues.erase(key);
      break;
    }
    case Op::kQueueLen: {
      auto it = state_.queues.find(key);
      put<int64_t>(out, it == state_.queues.end() ? 0 : static_cast<int64_t>(it->second.size()));
      break;
    }
    default:
      return close();
  }
  send(out);
}

}  // namespace ddprun::store::tcpstore
