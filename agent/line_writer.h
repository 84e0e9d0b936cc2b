#pragma once

#include <string>

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

/// Copies one worker stream to the console (and optionally a file) in whole lines,
/// so lines of different workers never interleave mid-line. A line ends at '\n' or
/// '\r' (progress bars); without a prefix the bytes pass through unchanged. A line
/// longer than kMaxPending is flushed in pieces rather than held without bound.
/// Single-threaded; the caller owns the file descriptors.
class LineWriter {
 public:
  static constexpr size_t kMaxPending = 64 * 1024;

  /// `console_fd` -1 means no console; `file_fd` -1 means no file copy.
  LineWriter(int console_fd, int file_fd, std::string prefix);

  void feed(const char* data, size_t size);
  /// Writes any unterminated last line (at EOF).
  void finish();

 private:
  void emit(const char* data, size_t size);

  int console_fd_;
  int file_fd_;
  std::string prefix_;
  std::string pending_;
  bool at_line_start_ = true;
  char last_char_ = '\0';
};

}  // namespace ddprun::agent
