#include "rendezvous/key_waiter.h"

#include <algorithm>
#include <cstdint>
#include <thread>

#include <spdlog/spdlog.h>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "rendezvous/etcd_store.h"
#include "rendezvous/tcp_store_client.h"

namespace ddprun::rendezvous {
namespace {

using Descriptor = boost::asio::posix::stream_descriptor;

// Pauses between attempts to open an etcd watch while no member takes it.
constexpr std::chrono::milliseconds kFirstRetry{50};
constexpr std::chrono::milliseconds kLastRetry{1000};

}  // namespace

struct KeyWaiter::Wait : std::enable_shared_from_this<Wait> {
  boost::asio::io_context& io;
  std::unique_ptr<Store> store;
  std::vector<std::string> keys;
  OnReady on_ready;
  OnError on_error;
  bool cancelled = false;  // loop thread only
  // TCPStore and etcd: the connection's descriptor, watched (not owned) by the loop.
  std::unique_ptr<Descriptor> readable;
  // etcd: the watch stream's silence, or the pause before the next attempt to open it.
  std::unique_ptr<boost::asio::steady_timer> timer;
  std::chrono::milliseconds retry = kFirstRetry;
  // etcd: bumped whenever the waits are armed anew; a completion of an earlier step
  // (queued before its wait was cancelled) is stale and ignored.
  uint64_t step = 0;
  // The in-process store: the thread blocked in the wait.
  std::thread thread;

  Wait(boost::asio::io_context& io, std::unique_ptr<Store> store, std::vector<std::string> keys,
       OnReady on_ready, OnError on_error)
      : io(io),
        store(std::move(store)),
        keys(std::move(keys)),
        on_ready(std::move(on_ready)),
        on_error(std::move(on_error)) {}

  void deliver(std::vector<std::string> values) {
    if (!cancelled) on_ready(std::move(values));
  }
  void fail(const std::string& message) {
    if (!cancelled) on_error(message);
  }
  bool current(uint64_t s) const { return !cancelled && s == step; }
  // fail() from the loop, not from here (which may be the waiter's constructor).
  void fail_later(std::string message) {
    boost::asio::post(io, [w = shared_from_this(), m = std::move(message)] { w->fail(m); });
  }
  // Stops watching the descriptor, which the store client owns and closes.
  void forget_descriptor() {
    if (!readable) return;
    boost::system::error_code ignored;
    readable->cancel(ignored);
    readable->release();
    readable.reset();
  }

  void start_tcp(TcpStoreClient& tcp);
  using Step = void (Wait::*)(EtcdStore&);
  void start_etcd(EtcdStore& etcd);
  void begin_etcd(EtcdStore& etcd);
  void open_etcd(EtcdStore& etcd);
  void watch_etcd(EtcdStore& etcd);
  void on_etcd_readable(EtcdStore& etcd);
  void on_etcd_silent(EtcdStore& etcd);
  void retry_etcd(EtcdStore& etcd, const std::string& why, Step next);
  void etcd_done(EtcdStore& etcd);
  void start_thread();
};

// The answer to the store's own WAIT request is read as a completion on the loop.
void KeyWaiter::Wait::start_tcp(TcpStoreClient& tcp) {
  int fd = -1;
  try {
    fd = tcp.start_wait(keys);
  } catch (const std::exception& e) {
    return fail_later(e.what());
  }
  readable = std::make_unique<Descriptor>(io, fd);
  readable->async_wait(Descriptor::wait_read,
                       [w = shared_from_this(), &tcp](const boost::system::error_code& ec) {
                         if (w->cancelled || ec == boost::asio::error::operation_aborted) return;
                         if (ec) return w->fail(ec.message());
                         // The answer is there: reading it and the values is one quick
                         // round trip.
                         try {
                           tcp.finish_wait();
                           w->deliver(tcp.multi_get_now(w->keys));
                         } catch (const std::exception& e) {
                           w->fail(e.what());
                         }
                       });
}

// etcd: the keys are read, then a watch stream is read on the loop as it arrives. A
// stream that breaks, or a member that cannot be reached, moves the wait on to the next
// member after a pause (the keys read again there); so does a stream silent too long.
void KeyWaiter::Wait::start_etcd(EtcdStore& etcd) {
  timer = std::make_unique<boost::asio::steady_timer>(io);
  begin_etcd(etcd);
}

// Called from the constructor too: how it ends is posted, never called from here.
void KeyWaiter::Wait::begin_etcd(EtcdStore& etcd) {
  bool ready = false;
  try {
    ready = etcd.start_wait(keys);
  } catch (const EtcdRefusedError& e) {
    return fail_later(e.what());
  } catch (const StoreError& e) {
    return retry_etcd(etcd, e.what(), &Wait::begin_etcd);
  } catch (const std::exception& e) {
    return fail_later(e.what());
  }
  if (ready) {
    uint64_t s = ++step;
    boost::asio::post(io, [w = shared_from_this(), &etcd, s] {
      if (w->current(s)) w->etcd_done(etcd);
    });
    return;
  }
  open_etcd(etcd);
}

void KeyWaiter::Wait::open_etcd(EtcdStore& etcd) {
  int fd = -1;
  try {
    fd = etcd.open_wait();
  } catch (const EtcdRefusedError& e) {
    return fail_later(e.what());
  } catch (const StoreError& e) {
    return retry_etcd(etcd, e.what(), &Wait::open_etcd);
  }
  retry = kFirstRetry;
  forget_descriptor();
  readable = std::make_unique<Descriptor>(io, fd);
  watch_etcd(etcd);
}

void KeyWaiter::Wait::watch_etcd(EtcdStore& etcd) {
  uint64_t s = ++step;
  timer->expires_after(etcd.wait_silence());
  timer->async_wait([w = shared_from_this(), &etcd, s](const boost::system::error_code& ec) {
    if (!ec && w->current(s)) w->on_etcd_silent(etcd);
  });
  readable->async_wait(Descriptor::wait_read,
                       [w = shared_from_this(), &etcd, s](const boost::system::error_code& ec) {
                         if (!w->current(s) || ec == boost::asio::error::operation_aborted) return;
                         if (ec) {
                           w->forget_descriptor();
                           return w->retry_etcd(etcd, ec.message(), &Wait::open_etcd);
                         }
                         w->on_etcd_readable(etcd);
                       });
}

void KeyWaiter::Wait::on_etcd_readable(EtcdStore& etcd) {
  ++step;  // the silence timer's completion, if queued, is stale now
  bool ready = false;
  try {
    ready = etcd.wait_readable();
  } catch (const EtcdRefusedError& e) {
    forget_descriptor();
    timer->cancel();
    return fail(e.what());
  } catch (const StoreError& e) {
    forget_descriptor();
    timer->cancel();
    return retry_etcd(etcd, e.what(), &Wait::begin_etcd);
  }
  if (ready) return etcd_done(etcd);
  watch_etcd(etcd);  // bytes came: not silent
}

// A silent stream may be a frozen member's: the next member is asked (the keys read
// again, where a read is needed, and watched from there).
void KeyWaiter::Wait::on_etcd_silent(EtcdStore& etcd) {
  ++step;               // the descriptor's completion, if queued, is stale now
  forget_descriptor();  // before the store drops the connection
  etcd.wait_silent();
  begin_etcd(etcd);
}

void KeyWaiter::Wait::retry_etcd(EtcdStore& etcd, const std::string& why, Step next) {
  spdlog::debug("etcd wait: {}; trying again in {} ms", why, retry.count());
  uint64_t s = ++step;
  timer->expires_after(retry);
  retry = std::min(retry * 2, kLastRetry);
  timer->async_wait([w = shared_from_this(), &etcd, s, next](const boost::system::error_code& ec) {
    if (!ec && w->current(s)) ((*w).*next)(etcd);
  });
}

void KeyWaiter::Wait::etcd_done(EtcdStore& etcd) {
  ++step;
  forget_descriptor();
  timer->cancel();
  auto values = etcd.wait_values();
  etcd.end_wait();
  deliver(std::move(values));
}

// Stores that only wait by blocking (the in-process MemoryStore of unit tests).
void KeyWaiter::Wait::start_thread() {
  Store* s = store.get();
  std::weak_ptr<Wait> weak = shared_from_this();
  thread = std::thread([&io = io, s, keys = keys, weak] {
    auto post = [&io, weak](std::function<void(Wait&)> f) {
      boost::asio::post(io, [weak, f = std::move(f)] {
        if (auto w = weak.lock()) f(*w);
      });
    };
    try {
      auto values = s->multi_get(keys, std::chrono::hours(24 * 365));
      post([values = std::move(values)](Wait& w) mutable { w.deliver(std::move(values)); });
    } catch (const std::exception& e) {
      post([msg = std::string(e.what())](Wait& w) { w.fail(msg); });
    }
  });
}

KeyWaiter::KeyWaiter(boost::asio::io_context& io, std::unique_ptr<Store> store,
                     std::vector<std::string> keys, OnReady on_ready, OnError on_error)
    : wait_(std::make_shared<Wait>(io, std::move(store), std::move(keys), std::move(on_ready),
                                   std::move(on_error))) {
  if (auto* tcp = dynamic_cast<TcpStoreClient*>(wait_->store.get())) {
    wait_->start_tcp(*tcp);
  } else if (auto* etcd = dynamic_cast<EtcdStore*>(wait_->store.get())) {
    wait_->start_etcd(*etcd);
  } else {
    wait_->start_thread();
  }
}

KeyWaiter::~KeyWaiter() {
  wait_->cancelled = true;
  wait_->forget_descriptor();
  wait_->timer.reset();  // its wait ends, aborted
  if (wait_->thread.joinable()) {
    wait_->store->interrupt();
    wait_->thread.join();
  }
  // Closed now, not when a cancelled handler (which holds the Wait) next runs: a
  // store waiting for its clients to leave must not wait for this one.
  wait_->store.reset();
}

}  // namespace ddprun::rendezvous
