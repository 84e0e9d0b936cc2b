#pragma once

#include <memory>
#include <string>

namespace ddprun::tracking {

/// The primary agent's hold on its run directory (an exclusive flock), from before its
/// workers start until it exits, however it exits: the kernel lets go of it then. A run
/// whose description was not written yet (run.db is still the empty image) is alive
/// exactly while the lock is held. Only this host's locks are seen (as with the owner's
/// pid: a run is checked on its owner's host).
class RunOwnerLock {
 public:
  /// The lock, or null when another process holds it. Throws TrackingError naming the
  /// directory when it cannot be opened.
  static std::unique_ptr<RunOwnerLock> take(const std::string& run_dir);
  ~RunOwnerLock();
  RunOwnerLock(const RunOwnerLock&) = delete;
  RunOwnerLock& operator=(const RunOwnerLock&) = delete;

  /// Whether some process holds `run_dir`'s lock (false when it cannot be opened).
  static bool held(const std::string& run_dir);

 private:
  explicit RunOwnerLock(int fd) : fd_(fd) {}

  int fd_ = -1;
};

}  // namespace ddprun::tracking
