#include "os/signal_catcher.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <string>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read.hpp>

#include "common/error.h"

namespace ddprun::os {
namespace {

struct Caught {
  int sig;
  pid_t sender;
};
static_assert(sizeof(Caught) <= PIPE_BUF, "one write must be atomic");

// The pipe of the catcher that catches each signal (-1: none).
struct WriteFds {
  WriteFds() {
    for (auto& fd : of) fd.store(-1);
  }
  std::array<std::atomic<int>, NSIG> of;
};
WriteFds g_write_fds;

void write_caught(int sig, siginfo_t* info, void* /*context*/) {
  int saved = errno;
  Caught c{sig, info != nullptr && info->si_code <= 0 ? info->si_pid : 0};
  int fd = sig > 0 && sig < NSIG ? g_write_fds.of[static_cast<size_t>(sig)].load() : -1;
  // A full pipe drops the signal: hundreds are already waiting to be handled.
  if (fd >= 0) {
    ssize_t written = ::write(fd, &c, sizeof(c));
    (void)written;
  }
  errno = saved;
}

}  // namespace

struct SignalCatcher::State {
  explicit State(boost::asio::io_context& io) : reader(io) {}
  boost::asio::posix::stream_descriptor reader;
  int write_fd = -1;
  Caught buffer{};
  OnSignal on_signal;
  std::vector<std::pair<int, struct sigaction>> previous;

  void read_next(const std::shared_ptr<State>& self) {
    boost::asio::async_read(reader, boost::asio::buffer(&buffer, sizeof(buffer)),
                            [self](const boost::system::error_code& ec, size_t) {
                              if (ec) return;  // closed: the catcher is gone
                              self->on_signal(self->buffer.sig, self->buffer.sender);
                              self->read_next(self);
                            });
  }
};

SignalCatcher::SignalCatcher(boost::asio::io_context& io, const std::vector<int>& signals,
                             OnSignal on_signal)
    : state_(std::make_shared<State>(io)) {
  for (int sig : signals) {
    if (sig <= 0 || sig >= NSIG) throw Error("cannot catch signal " + std::to_string(sig));
  }
  int fds[2];
  check_syscall(::pipe2(fds, O_CLOEXEC | O_NONBLOCK), "pipe2 for signals");
  state_->reader.assign(fds[0]);
  state_->write_fd = fds[1];
  state_->on_signal = std::move(on_signal);
  for (int sig : signals) {
    g_write_fds.of[static_cast<size_t>(sig)].store(fds[1]);
    struct sigaction action {};
    action.sa_sigaction = write_caught;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    struct sigaction old {};
    check_syscall(::sigaction(sig, &action, &old), "sigaction");
    state_->previous.emplace_back(sig, old);
  }
  state_->read_next(state_);
}

void SignalCatcher::take_pending() {
  // The pipe is non-blocking; each write is one whole Caught (atomic, <= PIPE_BUF).
  Caught c{};
  while (::read(state_->reader.native_handle(), &c, sizeof(c)) == sizeof(c)) {
    state_->on_signal(c.sig, c.sender);
  }
}

SignalCatcher::~SignalCatcher() {
  for (const auto& [sig, old] : state_->previous) {
    ::sigaction(sig, &old, nullptr);
    int mine = state_->write_fd;
    // A newer catcher of the same signal keeps its pipe.
    g_write_fds.of[static_cast<size_t>(sig)].compare_exchange_strong(mine, -1);
  }
  ::close(state_->write_fd);
  boost::system::error_code ignored;
  state_->reader.cancel(ignored);
  state_->reader.close(ignored);
}

SignalSource& process_signals() {
  struct Process : SignalSource {
    std::unique_ptr<Catch> catch_signals(boost::asio::io_context& io,
                                         const std::vector<int>& signals,
                                         OnSignal on_signal) override {
      return std::make_unique<SignalCatcher>(io, signals, std::move(on_signal));
    }
  };
  static Process process;
  return process;
}

}  // namespace ddprun::os
