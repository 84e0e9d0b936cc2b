#pragma once

#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace ddprun::agent {

struct GuardMemory;

/// A tiny process made at start-up that outlives ddprun only to kill what ddprun
/// started: if ddprun dies without releasing it (even by SIGKILL), the guard sees its
/// pipe close and SIGKILLs every process of every registered worker session,
/// grandchildren included. PDEATHSIG alone would only reach the direct children.
///
/// The guard makes system calls only, on a stack and a session list of its own. Where
/// that can be done without the C library (x86-64, arm64) and the kernel keeps a core
/// dump of ddprun from killing it (5.16 and later), it shares ddprun's memory
/// (CLONE_VM) instead of being a fork: no page tables copied at its start, and no page
/// ddprun writes later is copied for it. (The OOM killer, were it to pick ddprun, would
/// take the guard too; it picks the largest processes, and ddprun is a few MiB.)
/// Measured against the forked guard (bench/launch_bench.py, 2026-11-27): a 4-worker
/// launch of /bin/true takes 7.5 ms instead of 8.2.
///
/// Thread-safety: use from the agent's thread only.
class OrphanGuard {
 public:
  static constexpr size_t kBatch = 1024;  // sessions sent in one write at most
  /// Sessions watched at once at most (one per live worker); more are not watched.
  static constexpr size_t kMaxSessions = size_t{1} << 18;

  /// Starts the guard; a fork where `may_share_memory` is false. Throws SystemError.
  explicit OrphanGuard(bool may_share_memory = true);
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

  /// Everything was stopped cleanly: the guard kills nothing, and exits once this object
  /// goes (or this process, after stay_until_exit()).
  void release();

  /// The guard stays to the end of this process, not of this object: the pipe's write
  /// end is left to the kernel, which closes it after this process has let go of its
  /// memory. A guard sharing that memory is then its last user, so the freeing of it
  /// (every page, and a TLB flush on each CPU that ran a thread of ddprun) is the
  /// guard's, after ddprun's parent has its exit status: ~350 us less at every end.
  void stay_until_exit() { stays_ = true; }

  /// A guard sharing this memory is a "clone" child: waiting for it takes __WALL.
  pid_t pid() const { return pid_; }
  /// Whether the guard runs in this process's memory rather than a copy of it.
  bool shares_memory() const { return shares_memory_; }

 private:
  void send(const std::vector<pid_t>& sessions, int32_t sign);

  int write_fd_ = -1;
  pid_t pid_ = -1;
  GuardMemory* memory_ = nullptr;
  bool shares_memory_ = false;
  bool stays_ = false;
};

}  // namespace ddprun::agent
