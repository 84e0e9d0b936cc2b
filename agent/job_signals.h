#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "agent/agent_config.h"
#include "common/coro.h"
#include "os/signal_source.h"

namespace ddprun::agent {

/// Everything from outside that stops a job or reaches its workers, on the loop: the
/// stop signals (--signals_to_handle), the signals passed on while the job goes on
/// (--signals_to_forward; SIGUSR1/SIGUSR2 are always caught, so that they never kill
/// ddprun) and, with --stop_on_stdin_close, the end of standard input (as SIGTERM) or,
/// with --stdin_timeout, its silence (the controller sends keep-alive lines).
/// Caught from construction on; the handlers run once start() was called.
class JobSignals {
 public:
  struct Handlers {
    std::function<void(int sig)> stop;    // a stop signal, or stdin's end as SIGTERM
    std::function<int(int sig)> forward;  // send to every worker; returns how many
  };

  /// `source`: where the signals come from (os::process_signals(), or a test's).
  JobSignals(boost::asio::io_context& io, const AgentConfig& config, Handlers handlers,
             os::SignalSource& source);

  void start();

  /// Until a stop (signal, or stdin's end) has been handled or `max` has passed;
  /// returns whether one was. A real timer, not the agent's Clock: this waits for the
  /// kernel to deliver a signal, which a manual clock in tests would not end.
  Task<bool> await_stop(std::chrono::milliseconds max);

  /// Handles now the stop signals that came but wait for the loop.
  void take_pending() { stops_->take_pending(); }

 private:
  void on_stop_signal(int sig);
  void wait_stdin();
  void expect_stdin();  // (re)arms the --stdin_timeout timer
  void on_stdin_closed();
  void on_forwarded(int sig, pid_t sender);
  void stop(int sig);  // hands a stop to the agent, once it is decided

  boost::asio::io_context& io_;
  const AgentConfig& config_;
  Handlers handlers_;
  std::unique_ptr<os::SignalSource::Catch> stops_;
  boost::asio::steady_timer stdin_silence_;
  std::unique_ptr<os::SignalSource::Catch> forwarded_;
  std::unique_ptr<boost::asio::posix::stream_descriptor> stdin_;
  bool stdin_closed_ = false;
  bool started_ = false;
  std::vector<int> early_stops_;  // caught before start()
  bool stopped_ = false;          // a stop was handed on
  boost::asio::steady_timer* stop_awaited_ = nullptr;  // await_stop()'s, while it waits
};

}  // namespace ddprun::agent
