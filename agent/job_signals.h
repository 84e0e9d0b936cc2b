#pragma once

#include <functional>
#include <memory>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/signal_set.hpp>

#include "agent/agent_config.h"
#include "os/signal_catcher.h"

namespace ddprun::agent {

/// Everything from outside that stops a job or reaches its workers, on the loop: the
/// stop signals (--signals_to_handle), the signals passed on while the job goes on
/// (--signals_to_forward; SIGUSR1/SIGUSR2 are always caught, so that they never kill
/// ddprun) and, with --stop_on_stdin_close, the end of standard input (as SIGTERM).
/// Caught from construction on; the handlers run once start() was called.
class JobSignals {
 public:
  struct Handlers {
    std::function<void(int sig)> stop;    // a stop signal, or stdin's end as SIGTERM
    std::function<int(int sig)> forward;  // send to every worker; returns how many
  };

  JobSignals(boost::asio::io_context& io, const AgentConfig& config, Handlers handlers);

  void start();

 private:
  void wait_stop();
  void wait_stdin();
  void on_stdin_closed();
  void on_forwarded(int sig, pid_t sender);

  const AgentConfig& config_;
  Handlers handlers_;
  boost::asio::signal_set stop_;
  os::SignalCatcher forwarded_;
  std::unique_ptr<boost::asio::posix::stream_descriptor> stdin_;
  bool stdin_closed_ = false;
};

}  // namespace ddprun::agent
