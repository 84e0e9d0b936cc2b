#include "agent/job_signals.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <utility>

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>

#include "agent/failure_summary.h"
#include "common/descriptor_ready.h"
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

JobSignals::JobSignals(asio::io_context& io, const AgentConfig& config, Handlers handlers,
                       os::SignalSource& source)
    : io_(io),
      config_(config),
      handlers_(std::move(handlers)),
      stops_(source.catch_signals(io, config.stop_signals,
                                  [this](int sig, pid_t) { on_stop_signal(sig); })),
      stdin_silence_(io),
      forwarded_(source.catch_signals(io, signals_to_catch(config), [this](int sig, pid_t sender) {
        on_forwarded(sig, sender);
      })) {
  if (config_.stop_on_stdin_close) {
    // The agent keeps standard input (its controller's channel) to itself: the workers
    // get /dev/null, so that none of them reads the controller's keep-alive lines.
    int fd = ::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
    if (fd >= 0) stdin_ = std::make_unique<asio::posix::stream_descriptor>(io, fd);
    int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull >= 0) {
      ::dup2(devnull, STDIN_FILENO);
      ::close(devnull);
    }
  }
}

void JobSignals::start() {
  started_ = true;
  for (int sig : std::exchange(early_stops_, {})) {
    asio::post(io_, [this, sig] { stop(sig); });
  }
  if (!config_.stop_on_stdin_close) return;
  if (stdin_) {
    wait_stdin();
    expect_stdin();
  } else {
    on_stdin_closed();
  }
}

void JobSignals::on_stop_signal(int sig) {
  if (!started_) return early_stops_.push_back(sig);
  stop(sig);
}

void JobSignals::wait_stdin() {
  when_ready(*stdin_, asio::posix::descriptor_base::wait_read,
             [this](const boost::system::error_code& ec) {
               if (ec) return;
               char buf[512];
               ssize_t n = ::read(stdin_->native_handle(), buf, sizeof(buf));
               if (n > 0) expect_stdin();
               if (n > 0 || (n < 0 && (errno == EINTR || errno == EAGAIN))) {
                 return wait_stdin();
               }
               on_stdin_closed();
             });
}

void JobSignals::expect_stdin() {
  if (config_.stdin_timeout.count() <= 0 || stdin_closed_) return;
  stdin_silence_.expires_after(config_.stdin_timeout);
  stdin_silence_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stdin_closed_) return;
    stdin_closed_ = true;
    spdlog::warn(
        "nothing from the controller on standard input for {:.3g} s: it is frozen or its "
        "connection was lost; stopping",
        static_cast<double>(config_.stdin_timeout.count()) / 1000);
    stop(SIGTERM);
  });
}

void JobSignals::on_stdin_closed() {
  if (stdin_closed_) return;
  stdin_closed_ = true;
  stdin_silence_.cancel();
  spdlog::warn("standard input closed: the controller (or its ssh connection) is gone");
  stop(SIGTERM);
}

void JobSignals::stop(int sig) {
  stopped_ = true;
  if (stop_awaited_) stop_awaited_->cancel();
  handlers_.stop(sig);
}

Task<bool> JobSignals::await_stop(std::chrono::milliseconds max) {
  if (stopped_) co_return true;
  asio::steady_timer moment(io_, max);
  stop_awaited_ = &moment;
  boost::system::error_code ended;
  co_await moment.async_wait(asio::redirect_error(asio::use_awaitable, ended));
  stop_awaited_ = nullptr;
  co_return stopped_;
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
