#pragma once

#include <signal.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "agent/process_launcher.h"

namespace ddprun::testing {

/// Processes without processes: spawn() hands out pids and records what it was asked;
/// a test decides when each "process" exits (exit()), and a signal sent to a fake
/// process ends it with that signal unless the test made it ignore the signal. Exits
/// reach the agent as the real launcher delivers them: later, on the loop, several
/// at once when they were scripted together.
class FakeProcessLauncher : public agent::ProcessLauncher {
 public:
  struct Process {
    pid_t pid = 0;
    agent::SpawnOptions options;
    bool alive = true;
    std::vector<int> signals;  // received, in order

    /// The value of `name` in its environment ("" when unset).
    std::string env(const std::string& name) const {
      for (const auto& kv : options.env)
        if (kv.compare(0, name.size() + 1, name + "=") == 0) return kv.substr(name.size() + 1);
      return "";
    }
    int rank() const { return std::stoi(env("RANK")); }
    int local_rank() const { return std::stoi(env("LOCAL_RANK")); }
    int restart_count() const { return std::stoi(env("TORCHELASTIC_RESTART_COUNT")); }
  };

  explicit FakeProcessLauncher(boost::asio::io_context& io) : io_(io) {}

  void on_exit(ExitHandler handler) override { handler_ = std::move(handler); }

  pid_t spawn(agent::SpawnOptions options) override {
    pid_t pid = next_pid_++;
    processes_[pid] = Process{pid, std::move(options), true, {}};
    order_.push_back(pid);
    if (on_spawn) {
      boost::asio::post(io_, [this, pid] { on_spawn(processes_.at(pid)); });
    }
    return pid;
  }

  void signal_group(pid_t pgid, int sig) override {
    auto it = processes_.find(pgid);
    if (it == processes_.end()) return;
    it->second.signals.push_back(sig);
    if (it->second.alive && !ignored.count(sig)) exit({{pgid, -sig}});
    if (on_signal) {
      boost::asio::post(io_, [this, pgid, sig] { on_signal(processes_.at(pgid), sig); });
    }
  }

  /// A worker's own pid is its group's: the same as signal_group.
  void signal_process(pid_t pid, int sig) override { signal_group(pid, sig); }

  void kill_leftovers(pid_t) override { leftover_kills.push_back(alive()); }

  /// Ends these processes together (exitcode as torchrun: -N for signal N); the agent
  /// hears of it on the loop, in one batch.
  void exit(std::vector<agent::ChildExit> exits) {
    std::vector<agent::ChildExit> real;
    for (const auto& e : exits) {
      Process& p = processes_.at(e.pid);
      if (!p.alive) continue;
      p.alive = false;
      real.push_back(e);
    }
    if (real.empty()) return;
    boost::asio::post(io_, [this, real] {
      if (handler_) handler_(real);
    });
  }
  void exit(pid_t pid, int exitcode) { exit({{pid, exitcode}}); }
  /// Reports an exit for a process that already ended, as a confused OS might.
  void report_stale_exit(pid_t pid, int exitcode) {
    boost::asio::post(io_, [this, pid, exitcode] {
      if (handler_) handler_({{pid, exitcode}});
    });
  }

  /// Every process spawned, in order.
  std::vector<Process> spawned() const {
    std::vector<Process> out;
    for (pid_t pid : order_) out.push_back(processes_.at(pid));
    return out;
  }
  const Process& process(pid_t pid) const { return processes_.at(pid); }
  std::vector<pid_t> alive() const {
    std::vector<pid_t> out;
    for (pid_t pid : order_)
      if (processes_.at(pid).alive) out.push_back(pid);
    return out;
  }

  /// Runs on the loop after each spawn (the test's script).
  std::function<void(const Process&)> on_spawn;
  /// Runs on the loop after each signal a process received.
  std::function<void(const Process&, int sig)> on_signal;
  /// Signals fake processes survive (e.g. SIGTERM, to let the grace period run out).
  std::set<int> ignored;
  /// For each kill_leftovers(): the fake processes still alive when it came.
  std::vector<std::vector<pid_t>> leftover_kills;

 private:
  boost::asio::io_context& io_;
  ExitHandler handler_;
  pid_t next_pid_ = 1000;
  std::map<pid_t, Process> processes_;
  std::vector<pid_t> order_;
};

}  // namespace ddprun::testing
