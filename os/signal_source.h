#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <vector>

#include <boost/asio/io_context.hpp>

namespace ddprun::os {

/// Where the signals sent to ddprun come from: the OS in production (SignalCatcher),
/// a test's own hand in unit tests, which deliver them without raising one.
class SignalSource {
 public:
  using OnSignal = std::function<void(int sig, pid_t sender)>;

  /// Signals caught for one handler, delivered on the loop, until it goes.
  class Catch {
   public:
    virtual ~Catch() = default;
    /// Hands the signals caught but not delivered yet to the handler now, on the loop's
    /// thread: for a decision that must not miss one that came just before it.
    virtual void take_pending() = 0;
  };

  virtual ~SignalSource() = default;
  /// Catches `signals` from now on (throws SystemError where it cannot).
  virtual std::unique_ptr<Catch> catch_signals(boost::asio::io_context& io,
                                               const std::vector<int>& signals,
                                               OnSignal on_signal) = 0;
};

/// The signals the kernel delivers to this process.
SignalSource& process_signals();

}  // namespace ddprun::os
