#pragma once

#include <functional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/coro.h"

namespace ddprun {

/// What a coroutine on a loop waits for while the loop's handlers change the state it
/// decides on: each handler that changes that state calls notify(), and the coroutine
/// resumes from `co_await until(pred)` once `pred` holds. The handlers only record what
/// happened; the coroutine alone decides what follows.
///
/// Thread-safety: the loop's thread only. One waiter at a time.
class LoopCondition {
 public:
  explicit LoopCondition(boost::asio::io_context& io) : wake_(io) {}
  LoopCondition(const LoopCondition&) = delete;
  LoopCondition& operator=(const LoopCondition&) = delete;

  /// The state may have changed: the waiter looks again.
  void notify() { wake_.cancel(); }

  /// Returns once `pred` holds (at once if it does now).
  Task<void> until(std::function<bool()> pred) {
    while (!pred()) {
      wake_.expires_at(boost::asio::steady_timer::time_point::max());
      boost::system::error_code cancelled;
      co_await wake_.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, cancelled));
    }
  }

  /// Wraps `f`, a handler that changes the state: it notifies once `f` returns.
  template <typename F>
  auto notifying(F f) {
    return [this, f = std::move(f)](auto&&... args) mutable {
      f(std::forward<decltype(args)>(args)...);
      notify();
    };
  }

 private:
  boost::asio::steady_timer wake_;
};

}  // namespace ddprun
