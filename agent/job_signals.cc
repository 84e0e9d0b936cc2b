#include "agent/job_signals.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>

#include <spdlog/spdlog.h>

#include "agent/failure_summary.h"
#include "os/process_probe.h"

namespace asio = boost::asio;

namespace ddprun::agent {
namespace {

// The signals forwarded without stopping, and SIGUSR1/SIGUSR2 wherever they are not
// handled otherwise (their default action would kill ddprun and so the job).
std::vector<int> signals_to_catch(const AgentConfig& config) {
  std::set<int> sigs(config.forward_signals.begin(), config.forward_signals.end());
  sigs.insert({SIGUSR1, SIGUSR2});
  for (int sig : config.stop_signals) sigs.erase(sig);
  return {sigs.begin(), sigs.end()};
}

}  // namespace

JobSignals::JobSignals(asio::io_context& io, const AgentConfig& config, Handlers handlers)
    : config_(config),
      handlers_(std::move(handlers)),
      stop_(io),
      forwarded_(io, signals_to_catch(config),
                 [this](int sig, pid_t sender) { on_forwarded(sig, sender); }) {
  for (int sig : config_.stop_signals) stop_.add(sig);
  if (config_.stop_on_stdin_close) {
    // Only waited on, then read with a plain read(): the descriptor is shared with the
    // workers, whose stdin must stay blocking.
    int fd = ::dup(STDIN_FILENO);
    if (fd >= 0) stdin_ = std::make_unique<asio::posix::stream_descriptor>(io, fd);
  }
}

void JobSignals::start() {
  wait_stop();
  if (!config_.stop_on_stdin_close) return;
  if (stdin_) {
    wait_stdin();
  } else {
    on_stdin_closed();
  }
}

void JobSignals::wait_stop() {
  stop_.async_wait([this](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    handlers_.stop(sig);
    wait_stop();
  });
}

void JobSignals::wait_stdin() {
  stdin_->async_wait(asio::posix::descriptor_base::wait_read,
                     [this](const boost::system::error_code& ec) {
                       if (ec) return;
                       char buf[512];
                       ssize_t n = ::read(stdin_->native_handle(), buf, sizeof(buf));
                       if (n > 0 || (n < 0 && (errno == EINTR || errno == EAGAIN))) {
                         return wait_stdin();
                       }
                       on_stdin_closed();
                     });
}

void JobSignals::on_stdin_closed() {
  if (stdin_closed_) return;
  stdin_closed_ = true;
  spdlog::warn("standard input closed: the controller (or its ssh connection) is gone");
  handlers_.stop(SIGTERM);
}

void JobSignals::on_forwarded(int sig, pid_t sender) {
  const auto& forward = config_.forward_signals;
  if (std::find(forward.begin(), forward.end(), sig) == forward.end()) {
    spdlog::warn(
        "received {}; ignored (it is in neither --signals_to_forward nor --signals_to_handle)",
        signal_name(sig));
    return;
  }
  // slurmstepd signals every process of the step (scancel --signal, srun --signal): the
  // workers have it already, and a second one could cut their handler short.
  if (sender > 0 && os::process_name(sender) == "slurmstepd") {
    spdlog::warn("received {} from Slurm, which sent it to every worker too; the job goes on",
                 signal_name(sig));
    return;
  }
  int n = handlers_.forward(sig);
  spdlog::warn("received {}; forwarded it to {} worker(s); the job goes on", signal_name(sig), n);
}

}  // namespace ddprun::agent
