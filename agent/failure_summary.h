#pragma once

#include <sys/types.h>

#include <ctime>
#include <string>
#include <utility>
#include <vector>

namespace ddprun::agent {

/// One failed worker as the summary shows it.
struct FailureRecord {
  int global_rank = 0;
  int local_rank = 0;
  pid_t pid = 0;
  int exitcode = 0;        // torchrun style: negative for a signal
  std::time_t time = 0;    // when ddprun saw it fail (or the error file's timestamp)
  std::string error_file;  // "" when the worker wrote none
  std::string traceback;   // message/traceback from the error file, or an explanation
  /// The worker's output files that hold something (--redirects/--tee): "stdout" or
  /// "stderr", and the path.
  std::vector<std::pair<std::string, std::string>> logs;
};

/// Builds a record, reading the worker's error file when it wrote one. torchrun's
/// format: {"message": {"message": "...", "extraInfo": {"py_callstack": "...",
/// "timestamp": "..."}}} or {"message": "...", "timestamp": N}. An unreadable file is
/// reported in the traceback field, never thrown.
FailureRecord describe_failure(int global_rank, int local_rank, pid_t pid, int exitcode,
                               std::time_t observed, const std::string& error_file_path);

/// torchrun's failure summary: title "<name> FAILED", the other failures, then the
/// root cause. `failures` holds the root cause first; indices follow rank order.
std::string format_failure_summary(const std::string& name, const std::string& host,
                                   std::vector<FailureRecord> failures);

/// "SIGKILL" for 9; "signal N" when unknown.
std::string signal_name(int sig);

}  // namespace ddprun::agent
