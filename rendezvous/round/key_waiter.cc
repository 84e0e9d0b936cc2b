#include "rendezvous/round/key_waiter.h"

#include <chrono>

#include "common/cancel_signal.h"

namespace ddprun::rendezvous {
namespace {

// A wait for keys has no end of its own: its owner ends it.
constexpr std::chrono::hours kNoEnd{24 * 365};

}  // namespace

struct KeyWaiter::Wait {
  Wait(std::unique_ptr<store::LoopStore> store, OnReady on_ready, OnError on_error)
      : store(std::move(store)), on_ready(std::move(on_ready)), on_error(std::move(on_error)) {}

  std::unique_ptr<store::LoopStore> store;
  OnReady on_ready;
  OnError on_error;
  CancelSignal cancel{"the wait was cancelled"};
  bool stopped = false;  // the waiter is gone: no callback
};

KeyWaiter::KeyWaiter(boost::asio::io_context& io, std::unique_ptr<store::LoopStore> store,
                     std::vector<std::string> keys, OnReady on_ready, OnError on_error, Read read)
    : wait_(std::make_shared<Wait>(std::move(store), std::move(on_ready), std::move(on_error))) {
  // The coroutine keeps the wait (and its store) until it has ended.
  auto run = [](std::shared_ptr<Wait> w, std::vector<std::string> keys,
                Read read) -> Task<std::vector<std::string>> {
    if (read == Read::kNone) {
      co_await w->store->wait_until_there(std::move(keys), kNoEnd, w->cancel);
      co_return std::vector<std::string>{};
    }
    auto values = co_await w->store->wait_for(std::move(keys), kNoEnd, w->cancel);
    co_return values.value_or(std::vector<std::string>{});
  };
  boost::asio::co_spawn(
      io, run(wait_, std::move(keys), read),
      [w = wait_](const std::exception_ptr& error, std::vector<std::string> values) {
        if (w->stopped) return;
        if (!error) return w->on_ready(std::move(values));
        try {
          std::rethrow_exception(error);
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
  wait_->store->store().interrupt();
}

}  // namespace ddprun::rendezvous
