#pragma once

#include <string>
#include <vector>

namespace ddprun::agent {

/// The file in a worker's directory that its progress page is (hang detection).
inline constexpr const char* kProgressPage = "progress";

/// torchrun's log layout: <base>/<run_id>_<random>/attempt_<n>/<local_rank>/
/// holding stdout.log, stderr.log and error.json. With no base given, the base is a
/// fresh directory that remove_if_temporary() deletes again: under $TMPDIR when it is
/// set; else, when only small files can go there (`small`: error files, no logs, no
/// stack dumps), in memory (/dev/shm, where it is a tmpfs ddprun may write), for a
/// launch that writes nothing to disk for it; else under /tmp.
class LogDir {
 public:
  /// Creates the run directory. Throws SystemError naming the path.
  LogDir(const std::string& base, const std::string& run_id, bool small = false);

  /// Creates (if needed) and returns the directory of one worker of one attempt.
  std::string worker_dir(int attempt, int local_rank);
  /// Creates (if needed) and returns the directory of one attempt.
  std::string attempt_dir(int attempt);

  const std::string& run_dir() const { return run_dir_; }
  /// Whether ddprun made the directory and will remove it (no --log_dir given).
  bool temporary() const { return temporary_; }

  /// Deletes the base directory if ddprun created it as a temporary one.
  void remove_if_temporary();
  /// The same, unless a file in it holds something a user may read (a log, an error
  /// file, a stack dump): after a failure or a stop the empty tree is litter.
  void remove_if_temporary_and_unread();
  /// Keeps the directory even if it is a temporary one (it holds a report the user
  /// was pointed to).
  void keep() { temporary_ = false; }

 private:
  // Makes `dir`, whose parent exists, remembering it.
  void make_one(const std::string& dir);
  // Removes what it made, deepest first, while each is empty: true if that was all.
  bool remove_made_while_empty();

  std::string base_;
  std::string run_dir_;
  // Attempt and worker directories, in the order made; a few hundred at most (many
  // restarts: then the general way removes them).
  std::vector<std::string> made_;
  bool made_too_many_ = false;
  bool temporary_ = false;
};

}  // namespace ddprun::agent
