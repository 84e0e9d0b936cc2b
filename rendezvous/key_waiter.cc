#include "rendezvous/key_waiter.h"

#include <chrono>

#include "common/cancel_signal.h"
#include "net/wait_scope.h"
#include "rendezvous/etcd_store.h"
#include "rendezvous/etcd_stream.h"
#include "rendezvous/store_waits.h"

namespace ddprun::rendezvous {
namespace {

using Clock = std::chrono::steady_clock;

// A wait for keys has no end of its own: its owner ends it.
constexpr std::chrono::hours kNoEnd{24 * 365};

// etcd: the keys are read, then watched from there on the loop; wherever the stream
// breaks or stays silent, the next member is asked (the keys read again first).
Task<std::vector<std::string>> wait_on_etcd(EtcdStore& etcd, const std::vector<std::string>& keys,
                                            CancelSignal& cancel) {
  struct Ends {  // however the wait ends, the store serves calls again
    EtcdStore& etcd;
    ~Ends() { etcd.end_wait(); }
  } ends{etcd};
  EtcdStream stream{[&] { return etcd.start_wait(keys) ? -1 : etcd.open_wait(); },
                    [&] { return etcd.wait_readable(); }, [&] { etcd.wait_silent(); },
                    etcd.wait_silence()};
  co_await follow_etcd_stream(stream, Clock::now() + kNoEnd, cancel);
  co_return etcd.wait_values();
}

Task<std::vector<std::string>> wait_on(Store& store, std::vector<std::string> keys,
                                       CancelSignal& cancel) {
  if (auto* etcd = dynamic_cast<EtcdStore*>(&store))
    co_return co_await wait_on_etcd(*etcd, keys, cancel);
  co_await wait_for_keys(store, keys, kNoEnd, cancel);
  co_return values_now(store, keys);
}

}  // namespace

struct KeyWaiter::Wait {
  Wait(std::unique_ptr<Store> store, OnReady on_ready, OnError on_error)
      : store(std::move(store)), on_ready(std::move(on_ready)), on_error(std::move(on_error)) {}

  std::unique_ptr<Store> store;
  OnReady on_ready;
  OnError on_error;
  CancelSignal cancel{"the wait was cancelled"};
  bool stopped = false;  // the waiter is gone: no callback
};

KeyWaiter::KeyWaiter(boost::asio::io_context& io, std::unique_ptr<Store> store,
                     std::vector<std::string> keys, OnReady on_ready, OnError on_error)
    : wait_(std::make_shared<Wait>(std::move(store), std::move(on_ready), std::move(on_error))) {
  // The coroutine keeps the wait (and its store) until it has ended.
  auto run = [](std::shared_ptr<Wait> w,
                std::vector<std::string> keys) -> Task<std::vector<std::string>> {
    co_return co_await wait_on(*w->store, std::move(keys), w->cancel);
  };
  boost::asio::co_spawn(
      io, run(wait_, std::move(keys)),
      [w = wait_](const std::exception_ptr& error, std::vector<std::string> values) {
        if (w->stopped) return;
        if (!error) return w->on_ready(std::move(values));
        try {
          std::rethrow_exception(error);
        } catch (const net::Interrupted&) {
          // A stop signal waits for the loop (or the stopping job's time for the store
          // ran out): no fault of the store, and the agent stops; no callback.
        } catch (const std::exception& e) {
          w->on_error(e.what());
        }
      });
}

KeyWaiter::~KeyWaiter() {
  wait_->stopped = true;
  wait_->cancel.cancel();
  // The connection goes now, not when the cancelled wait next runs: a store waiting for
  // its clients to leave must not wait for this one.
  wait_->store->interrupt();
}

}  // namespace ddprun::rendezvous
