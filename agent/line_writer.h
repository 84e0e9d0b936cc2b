#pragma once

#include <memory>
#include <string>
#include <vector>

namespace ddprun::agent {

/// Expands ${role_name} ${local_rank} ${rank} ${node_rank} ${host} in a prefix template.
struct PrefixVars {
  std::string role_name;
  int local_rank = 0;
  int rank = 0;
  int node_rank = 0;
  std::string host;
};
std::string expand_prefix(const std::string& tmpl, const PrefixVars& vars);

/// torchrun 2.14's --duplicate_stdout_filters / --duplicate_stderr_filters: every line
/// that contains one of `needles` is also appended, with its worker's prefix, to one
/// file of the attempt, shared by its workers (a line a write: lines never mix). Owns
/// the file.
class LineFilter {
 public:
  /// Creates the file. Throws SystemError naming the path.
  LineFilter(const std::string& path, std::vector<std::string> needles);
  ~LineFilter();
  LineFilter(const LineFilter&) = delete;
  LineFilter& operator=(const LineFilter&) = delete;

  /// Copies the matching ones of these whole lines (a last one may be unterminated).
  void copy_matching(const std::string& prefix, const char* data, size_t size) const;

 private:
  int fd_;
  std::vector<std::string> needles_;
};

/// Copies one worker stream to the console (and optionally a file) in whole lines,
/// so lines of different workers never interleave mid-line. A line ends at '\n' or
/// '\r' (progress bars); without a prefix the bytes pass through unchanged. A line
/// longer than kMaxPending is flushed in pieces rather than held without bound.
/// Single-threaded; the caller owns the file descriptors.
class LineWriter {
 public:
  static constexpr size_t kMaxPending = 64 * 1024;

  /// `console_fd` -1 means no console; `file_fd` -1 means no file copy. `filter`, where
  /// given, also gets every line, with `filter_prefix` in front.
  LineWriter(int console_fd, int file_fd, std::string prefix,
             std::shared_ptr<const LineFilter> filter = nullptr, std::string filter_prefix = "");

  void feed(const char* data, size_t size);
  /// Writes any unterminated last line (at EOF).
  void finish();

 private:
  void emit(const char* data, size_t size);

  int console_fd_;
  int file_fd_;
  std::string prefix_;
  std::shared_ptr<const LineFilter> filter_;
  std::string filter_prefix_;
  std::string pending_;
  bool at_line_start_ = true;
  char last_char_ = '\0';
};

}  // namespace ddprun::agent
