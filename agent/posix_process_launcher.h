#pragma once

#include <set>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include "agent/process_launcher.h"

namespace ddprun::agent {

/// The Linux implementation: clone(CLONE_VM | CLONE_VFORK) + execve (no copy of
/// ddprun's memory, so starting N workers costs N execs, not N forks of the agent),
/// exits learned from SIGCHLD on the agent's io_context (never polled), leftovers
/// found through /proc.
///
/// Construct before any child exists: it takes SIGCHLD for the io_context.
class PosixProcessLauncher : public ProcessLauncher {
 public:
  explicit PosixProcessLauncher(boost::asio::io_context& io);

  void on_exit(ExitHandler handler) override { on_exit_ = std::move(handler); }
  pid_t spawn(const SpawnOptions& options) override;
  void signal_group(pid_t pgid, int sig) override;
  void signal_process(pid_t pid, int sig) override;
  void kill_leftovers(pid_t spare) override;

 private:
  void wait_for_children();
  void reap_children();

  boost::asio::signal_set child_signals_;
  std::set<pid_t> children_;  // spawned and not reaped yet
  ExitHandler on_exit_;
};

}  // namespace ddprun::agent
