#include "tracking/run_owner_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tracking/run_store.h"

namespace ddprun::tracking {
namespace {

int open_dir(const std::string& dir) {
  return ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

}  // namespace

std::unique_ptr<RunOwnerLock> RunOwnerLock::take(const std::string& run_dir) {
  int fd = open_dir(run_dir);
  if (fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0)
    return std::unique_ptr<RunOwnerLock>(new RunOwnerLock(fd));
  int err = errno;
  if (fd >= 0) ::close(fd);
  if (fd >= 0 && err == EWOULDBLOCK) return nullptr;
  throw TrackingError("cannot lock the run directory " + run_dir + ": " + std::strerror(err));
}

RunOwnerLock::~RunOwnerLock() { ::close(fd_); }

bool RunOwnerLock::held(const std::string& run_dir) {
  int fd = open_dir(run_dir);
  if (fd < 0) return false;
  bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // a shared lock taken here goes with it
  return held;
}

}  // namespace ddprun::tracking
