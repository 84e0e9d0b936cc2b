#include "net/wait_scope.h"

#include <algorithm>
#include <cerrno>

namespace ddprun::net {
namespace {

using Clock = std::chrono::steady_clock;

thread_local WaitScope* t_scope = nullptr;

int ms_until(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::clamp<long long>(left.count() + 1, 0, 60'000));
}

}  // namespace

WaitScope::WaitScope(int interrupt_fd) : interrupt_fd_(interrupt_fd) { t_scope = this; }

WaitScope::~WaitScope() {
  if (t_scope == this) t_scope = nullptr;
}

int wait_ready(pollfd& p, Clock::time_point deadline) {
  WaitScope* scope = t_scope;
  bool cut = false;
  if (scope != nullptr && scope->limit_ && Clock::now() + *scope->limit_ < deadline) {
    deadline = Clock::now() + *scope->limit_;
    cut = true;
  }
  pollfd fds[2] = {p, {scope != nullptr ? scope->interrupt_fd_ : -1, POLLIN, 0}};
  while (true) {
    fds[0].revents = fds[1].revents = 0;
    int n = ::poll(fds, 2, ms_until(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw SystemError("poll", errno);
    if (fds[1].revents != 0) throw Interrupted("interrupted by a stop signal");
    if (n > 0) {
      p.revents = fds[0].revents;
      return n;
    }
    if (Clock::now() < deadline) continue;
    if (cut) throw Interrupted("no answer while stopping");
    return 0;
  }
}

void pause(std::chrono::milliseconds d) {
  pollfd none{-1, 0, 0};
  wait_ready(none, Clock::now() + d);
}

}  // namespace ddprun::net
