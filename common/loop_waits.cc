#include "common/loop_waits.h"

#include <memory>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/descriptor_ready.h"

namespace ddprun {
namespace {

namespace asio = boost::asio;
using Descriptor = asio::posix::stream_descriptor;

// What a wait for a descriptor shares with its deadline's handler, which may run after
// the wait has returned: it outlives both.
struct Watch {
  Watch(const asio::any_io_executor& ex, int fd) : descriptor(ex, fd), deadline(ex) {}
  ~Watch() { forget(); }
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

  void abort() {
    boost::system::error_code ignored;
    if (descriptor.is_open()) descriptor.cancel(ignored);
  }
  // The caller's descriptor: no longer watched, never closed here.
  void forget() {
    if (!descriptor.is_open()) return;
    abort();
    descriptor.release();
  }

  Descriptor descriptor;
  asio::steady_timer deadline;
};

// Until `fd` is ready for `what` (true) or `deadline` (false), as the kernel confirms
// (common/descriptor_ready.h).
Task<bool> wait_ready(int fd, Descriptor::wait_type what,
                      std::chrono::steady_clock::time_point deadline, CancelSignal& cancel) {
  cancel.check();
  auto watch = std::make_shared<Watch>(co_await asio::this_coro::executor, fd);
  watch->deadline.expires_at(deadline);
  watch->deadline.async_wait([watch](const boost::system::error_code& ec) {
    if (!ec) watch->abort();
  });
  CancelSignal::Hook hook(cancel, [&watch] { watch->abort(); });
  boost::system::error_code ec;
  do {
    co_await watch->descriptor.async_wait(what, asio::redirect_error(asio::use_awaitable, ec));
  } while (!ec && !ready_now(fd, what));
  watch->deadline.cancel();
  watch->forget();
  cancel.check();
  // Aborted: by the deadline (a cancel threw above), unless the descriptor became ready
  // as it passed: on a busy loop the deadline's handler may run first, and a wait whose
  // answer is there must not be taken for one that ran out (the store's client would
  // then withdraw its WAIT, another round trip). Any other error: the I/O says it.
  co_return ec != asio::error::operation_aborted || ready_now(fd, what);
}

}  // namespace

Task<void> sleep_for(std::chrono::microseconds d, CancelSignal& cancel) {
  cancel.check();
  asio::steady_timer timer(co_await asio::this_coro::executor, d);
  CancelSignal::Hook hook(cancel, [&timer] { timer.cancel(); });
  boost::system::error_code ec;
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  cancel.check();
}

Task<bool> wait_readable(int fd, std::chrono::steady_clock::time_point deadline,
                         CancelSignal& cancel) {
  return wait_ready(fd, Descriptor::wait_read, deadline, cancel);
}

Task<bool> wait_writable(int fd, std::chrono::steady_clock::time_point deadline,
                         CancelSignal& cancel) {
  return wait_ready(fd, Descriptor::wait_write, deadline, cancel);
}

}  // namespace ddprun
