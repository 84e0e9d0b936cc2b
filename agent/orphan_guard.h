#pragma once

#include <sys/types.h>

namespace ddprun::agent {

/// A tiny process forked at start-up that outlives ddprun only to kill what ddprun
/// started: if ddprun dies without releasing it (even by SIGKILL), the guard sees its
/// pipe close and SIGKILLs every process of every registered worker session,
/// grandchildren included. PDEATHSIG alone would only reach the direct children.
///
/// Thread-safety: use from the agent's thread only.
class OrphanGuard {
 public:
  /// Forks the guard. Call before any thread exists. Throws SystemError.
  OrphanGuard();
  /// Without release(), the guard kills all registered sessions when ddprun exits.
  ~OrphanGuard();
  OrphanGuard(const OrphanGuard&) = delete;
  OrphanGuard& operator=(const OrphanGuard&) = delete;

  /// Registers a worker's session (its pid) for cleanup if ddprun dies.
  void watch(pid_t session);
  /// A session that is over (its processes killed and reaped): the guard forgets it,
  /// so that a later process given the same pid is never taken for it.
  void forget(pid_t session);

  /// Everything was stopped cleanly: the guard exits without killing anything.
  void release();

  pid_t pid() const { return pid_; }

 private:
  int write_fd_ = -1;
  pid_t pid_ = -1;
};

}  // namespace ddprun::agent
