#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include <boost/asio/io_context.hpp>

namespace ddprun {

/// A one-shot timer on the agent's loop. Single-threaded: the loop's thread only.
class Timer {
 public:
  virtual ~Timer() = default;
  /// Calls `fire` on the loop once `delay` has passed; starting it again replaces the
  /// pending call.
  virtual void start(std::chrono::milliseconds delay, std::function<void()> fire) = 0;
  /// The pending call, if any, never comes (even one already due).
  virtual void cancel() = 0;
};

/// The agent's time: every delay it waits for (grace period, heartbeats, pipe drain,
/// tracking polls) is a Timer from here, so tests can move time by hand.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::unique_ptr<Timer> make_timer() = 0;
  /// Time since a fixed point of this clock's own (monotonic).
  virtual std::chrono::milliseconds now() const = 0;
};

/// Real time: steady_timer on the agent's io_context.
class SteadyClock : public Clock {
 public:
  explicit SteadyClock(boost::asio::io_context& io) : io_(io) {}
  std::unique_ptr<Timer> make_timer() override;
  std::chrono::milliseconds now() const override;

 private:
  boost::asio::io_context& io_;
};

}  // namespace ddprun
