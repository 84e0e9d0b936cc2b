#include "common/descriptor_ready.h"

#include <poll.h>

namespace ddprun {

bool ready_now(int fd, boost::asio::posix::descriptor_base::wait_type what) {
  using boost::asio::posix::descriptor_base;
  pollfd p{fd, POLLPRI, 0};
  if (what == descriptor_base::wait_read) p.events = POLLIN | POLLRDHUP;
  if (what == descriptor_base::wait_write) p.events = POLLOUT;
  return ::poll(&p, 1, 0) != 0;  // an error of poll's own: let the I/O say it
}

}  // namespace ddprun
