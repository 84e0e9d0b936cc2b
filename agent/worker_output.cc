#include "agent/worker_output.h"

#include <fcntl.h>
#include <unistd.h>

#include <boost/asio/read.hpp>

#include "common/error.h"

namespace ddprun::agent {
namespace {

constexpr size_t kReadChunk = 64 * 1024;

int open_log_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw SystemError("cannot open log file " + path, errno);
  return fd;
}

}  // namespace

WorkerOutput::WorkerOutput(boost::asio::io_context& io, const WorkerSpec& spec, int local_rank,
                           const std::string& dir, const std::string& prefix)
    : io_(io) {
  open_stream(streams_[0], true, spec, local_rank, dir, prefix);
  open_stream(streams_[1], false, spec, local_rank, dir, prefix);
}

WorkerOutput::~WorkerOutput() {
  for (auto& s : streams_) {
    close_stream(s);
    if (s.child_fd >= 0) ::close(s.child_fd);
    if (s.file_fd >= 0) ::close(s.file_fd);
  }
}

void WorkerOutput::open_stream(Stream& s, bool is_stdout, const WorkerSpec& spec, int local_rank,
                               const std::string& dir, const std::string& prefix) {
  auto has = is_stdout ? includes_stdout : includes_stderr;
  std::string path = dir + (is_stdout ? "/stdout.log" : "/stderr.log");
  bool hidden = !spec.local_ranks_filter.empty() && !spec.local_ranks_filter.count(local_rank);
  if (has(spec.redirects.for_rank(local_rank)) || hidden) {
    s.child_fd = open_log_file(path);
    return;
  }
  bool tee = has(spec.tee.for_rank(local_rank));
  if (tee) s.file_fd = open_log_file(path);
  int fds[2];
  check_syscall(::pipe2(fds, O_CLOEXEC), "pipe for worker output");
  s.child_fd = fds[1];
  s.pipe = std::make_unique<boost::asio::posix::stream_descriptor>(io_, fds[0]);
  int console = is_stdout ? STDOUT_FILENO : STDERR_FILENO;
  bool prefixed = tee || spec.prefix_all_output;
  s.writer = std::make_unique<LineWriter>(console, s.file_fd, prefixed ? prefix : "");
  s.buffer.resize(kReadChunk);
}

void WorkerOutput::start(std::function<void()> on_eof) {
  on_eof_ = std::move(on_eof);
  for (auto& s : streams_) {
    // The worker holds its own copy now; keeping ours would hide its EOF.
    if (s.child_fd >= 0) ::close(s.child_fd);
    s.child_fd = -1;
    if (s.pipe) read_more(s);
  }
}

void WorkerOutput::read_more(Stream& s) {
  s.pipe->async_read_some(boost::asio::buffer(s.buffer),
                          [this, &s](const boost::system::error_code& ec, size_t n) {
                            if (n > 0) s.writer->feed(s.buffer.data(), n);
                            if (ec == boost::asio::error::operation_aborted || !s.pipe) return;
                            if (ec) {
                              close_stream(s);
                              if (on_eof_) on_eof_();
                              return;
                            }
                            read_more(s);
                          });
}

void WorkerOutput::drain_and_close() {
  for (auto& s : streams_) {
    if (!s.pipe) continue;
    int fd = s.pipe->native_handle();
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    ssize_t n = 0;
    while ((n = ::read(fd, s.buffer.data(), s.buffer.size())) > 0) {
      s.writer->feed(s.buffer.data(), static_cast<size_t>(n));
    }
    close_stream(s);
  }
}

void WorkerOutput::close_stream(Stream& s) {
  if (!s.pipe) return;
  s.writer->finish();
  boost::system::error_code ignored;
  s.pipe->close(ignored);
  s.pipe.reset();
}

int WorkerOutput::open_pipes() const {
  int n = 0;
  for (const auto& s : streams_) n += s.pipe ? 1 : 0;
  return n;
}

}  // namespace ddprun::agent
