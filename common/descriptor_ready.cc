#include "common/descriptor_ready.h"

#include <poll.h>

namespace ddprun {

bool ready_now(int fd, boost::asio::posix::descriptor_base::wait_type what) {
  short events = what == boost::asio::posix::descriptor_base::wait_read    ? POLLIN | POLLRDHUP
                 : what == boost::asio::posix::descriptor_base::wait_write ? POLLOUT
                                                                           : POLLPRI;
  pollfd p{fd, events, 0};
  return ::poll(&p, 1, 0) != 0;  // an error of poll's own: let the I/O say it
}

}  // namespace ddprun
