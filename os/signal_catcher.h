#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "os/signal_source.h"

namespace ddprun::os {

/// Catches signals and delivers each on the loop with the pid that sent it (siginfo's
/// si_pid; 0 when the kernel did), which asio::signal_set cannot tell. The handler
/// only writes 8 bytes to a pipe. Instances may coexist for different signals (the
/// newest catches a signal two ask for); the signals' previous actions come back when
/// one is destroyed.
class SignalCatcher : public SignalSource::Catch {
 public:
  using OnSignal = SignalSource::OnSignal;

  /// Throws SystemError if the pipe or an action cannot be set up.
  SignalCatcher(boost::asio::io_context& io, const std::vector<int>& signals, OnSignal on_signal);
  ~SignalCatcher() override;

  /// Hands the signals caught but not delivered yet to the handler now, on the loop's
  /// thread: for a decision that must not miss one that came just before it.
  void take_pending() override;
  SignalCatcher(const SignalCatcher&) = delete;
  SignalCatcher& operator=(const SignalCatcher&) = delete;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace ddprun::os
