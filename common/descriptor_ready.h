#pragma once

#include <utility>

#include <boost/asio/posix/stream_descriptor.hpp>

namespace ddprun {

// Asio's readiness of a descriptor is taken only once the kernel confirms it: a wait
// cancelled (or a descriptor released) as its descriptor became ready frees Asio's
// state for it, a later registration (of any descriptor) may be given that state back,
// and the event still queued for it then completes the new one's wait, though nothing
// is there (LoopWaits tests).

/// Whether the kernel says `fd` is ready for `what` now; an error or a hang-up counts
/// (the I/O will say it).
bool ready_now(int fd, boost::asio::posix::descriptor_base::wait_type what);

/// Calls `on_ready(ec)` once `descriptor` is ready for `what` as the kernel says, or
/// with the wait's error (operation_aborted where cancelled or destroyed, and then
/// `descriptor` is not touched again).
template <typename Handler>
void when_ready(boost::asio::posix::stream_descriptor& descriptor,
                boost::asio::posix::descriptor_base::wait_type what, Handler on_ready) {
  descriptor.async_wait(what, [&descriptor, what, on_ready = std::move(on_ready)](
                                  const boost::system::error_code& ec) mutable {
    if (!ec && !ready_now(descriptor.native_handle(), what)) {
      return when_ready(descriptor, what, std::move(on_ready));
    }
    on_ready(ec);
  });
}

}  // namespace ddprun
