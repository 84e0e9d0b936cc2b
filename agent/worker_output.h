#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include "agent/line_writer.h"
#include "agent/worker_spec.h"

namespace ddprun::agent {

/// The standard output and error of one worker, routed as the spec says:
/// --redirects (and ranks hidden by --local_ranks_filter) go straight to
/// <dir>/stdout.log|stderr.log with no copy through ddprun; everything else flows
/// through a pipe to the console in whole lines, prefixed when tee'd (or when a
/// prefix template was given), copied to the log file when tee'd, and its lines that
/// match the attempt's filters copied to their file (--duplicate_*_filters).
/// Owns every descriptor it opens. Used from the io_context's thread only.
class WorkerOutput {
 public:
  /// Opens files and pipes. Throws SystemError naming the path.
  /// `filters`: stdout's and stderr's, null where none.
  using Filters = std::array<std::shared_ptr<const LineFilter>, 2>;
  WorkerOutput(boost::asio::io_context& io, const WorkerSpec& spec, int local_rank,
               const std::string& dir, const std::string& prefix, const Filters& filters = {});
  ~WorkerOutput();
  WorkerOutput(const WorkerOutput&) = delete;
  WorkerOutput& operator=(const WorkerOutput&) = delete;

  /// Descriptors to install as the child's fd 1 and 2.
  int child_stdout() const { return streams_[0].child_fd; }
  int child_stderr() const { return streams_[1].child_fd; }

  /// After fork: closes the child's ends and starts reading. `on_eof` runs once per
  /// piped stream when it reaches end of file.
  void start(std::function<void()> on_eof);

  /// Reads what is left in the pipes without waiting, then closes them. For pipes
  /// kept open by a process that escaped the worker's session.
  void drain_and_close();

  /// Piped streams not yet at end of file.
  int open_pipes() const;

  /// Output so far, as a sign of life that only grows: the reads of piped streams plus
  /// the bytes of streams sent straight to their file (--redirects).
  uint64_t reads() const;

 private:
  struct Stream {
    int child_fd = -1;  // what the worker writes to
    int file_fd = -1;   // log file (tee; redirect: ours, to see it grow)
    std::unique_ptr<boost::asio::posix::stream_descriptor> pipe;
    std::unique_ptr<LineWriter> writer;
  };

  void open_stream(Stream& s, bool is_stdout, const WorkerSpec& spec, int local_rank,
                   const std::string& dir, const std::string& prefix,
                   std::shared_ptr<const LineFilter> filter);
  void read_more(Stream& s);
  void read_ready(Stream& s);
  void close_stream(Stream& s);

  boost::asio::io_context& io_;
  Stream streams_[2];
  std::function<void()> on_eof_;
  uint64_t reads_ = 0;
};

}  // namespace ddprun::agent
