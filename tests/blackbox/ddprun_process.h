#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tests/helpers/free_port.h"

namespace ddprun::test {

/// Paths baked in by CMake.
std::string ddprun_binary();
std::string test_worker_binary();
std::string store_worker_binary();

/// A fresh empty directory under the test's temp dir.
std::string make_temp_dir();

/// One run of the built ddprun binary, its output captured through pipes.
class DdprunProcess {
 public:
  /// Starts `ddprun args...` with the test's environment plus `env` (an empty
  /// optional value unsets the variable).
  DdprunProcess(const std::vector<std::string>& args,
                const std::map<std::string, std::optional<std::string>>& env = {});
  ~DdprunProcess();

  DdprunProcess(const DdprunProcess&) = delete;
  DdprunProcess& operator=(const DdprunProcess&) = delete;

  pid_t pid() const { return pid_; }

  /// Waits (bounded) for exit and end of output. On timeout kills ddprun, and the
  /// exit code is -1.
  int wait(std::chrono::seconds timeout = std::chrono::seconds(30));

  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }
  /// What ddprun wrote to stderr so far, without waiting.
  const std::string& err_so_far();

 private:
  /// Reads what the pipes hold, waiting up to `wait_ms`; closes a pipe at its end.
  void read_output(int wait_ms);

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::string out_;
  std::string err_;
  std::optional<int> exit_code_;
};

/// Runs ddprun to completion: {exit code, stdout, stderr}.
struct Finished {
  int code;
  std::string out;
  std::string err;
};
Finished run_ddprun(const std::vector<std::string>& args,
                    const std::map<std::string, std::optional<std::string>>& env = {});

/// A connection to 127.0.0.1:`port` (the caller closes it), or -1 when nothing accepts.
int connect_loopback(int port);

/// True while `pid` exists and is not a zombie.
bool process_alive(pid_t pid);

/// Polls `condition` every 10 ms until it holds or `timeout` passes; returns its value.
template <typename F>
bool eventually(F condition, std::chrono::milliseconds timeout = std::chrono::seconds(10));

/// Reads a whole file ("" when missing).
std::string read_file(const std::string& path);

/// Lines of `text` that start with `prefix`.
std::vector<std::string> lines_starting_with(const std::string& text, const std::string& prefix);

/// The metric points among the rows of `runs export --format csv` that start with
/// `prefix` (the config and summary rows left out).
std::vector<std::string> csv_points(const std::string& csv, const std::string& prefix);

}  // namespace ddprun::test

#include <thread>

template <typename F>
bool ddprun::test::eventually(F condition, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return condition();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}
