#pragma once

#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace ddprun::agent {

/// A tiny process forked at start-up that outlives ddprun only to kill what ddprun
/// started: if ddprun dies without releasing it (even by SIGKILL), the guard sees its
/// pipe close and SIGKILLs every process of every registered worker session,
/// grandchildren included. PDEATHSIG alone would only reach the direct children.
///
/// Thread-safety: use from the agent's thread only.
class OrphanGuard {
 public:
  static constexpr size_t kBatch = 1024;  // sessions sent in one write at most

  /// Forks the guard. Call before any thread exists. Throws SystemError.
  OrphanGuard();
  /// Without release(), the guard kills all registered sessions when ddprun exits.
  ~OrphanGuard();
  OrphanGuard(const OrphanGuard&) = delete;
  OrphanGuard& operator=(const OrphanGuard&) = delete;

  /// Registers workers' sessions (their pids) for cleanup if ddprun dies: a group's
  /// in one write, which wakes the guard once.
  void watch(const std::vector<pid_t>& sessions);
  /// Sessions that are over (their processes killed and reaped): the guard forgets
  /// them, so that a later process given the same pid is never taken for one.
  void forget(const std::vector<pid_t>& sessions);

  /// Everything was stopped cleanly: the guard exits without killing anything.
  void release();

  pid_t pid() const { return pid_; }

 private:
  void send(const std::vector<pid_t>& sessions, int32_t sign);

  int write_fd_ = -1;
  pid_t pid_ = -1;
};

}  // namespace ddprun::agent
