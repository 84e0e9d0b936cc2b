#include "agent/worker_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include <boost/asio/post.hpp>

#include "common/error.h"

namespace ddprun::agent {
namespace {

constexpr size_t kReadChunk = 64 * 1024;
// A stream that keeps its pipe full yields the loop after this many chunks per wake.
constexpr int kChunksPerWake = 16;

// Every stream reads into this one buffer once its pipe is readable: an idle worker
// costs no buffer (512 workers' streams would hold 64 MiB otherwise). The agent is
// single-threaded; tests that run agents on several threads get one each. Not zeroed:
// its pages are touched only by what workers write.
char* read_buffer() {
  static thread_local std::unique_ptr<char[]> buffer =
      std::make_unique_for_overwrite<char[]>(kReadChunk);
  return buffer.get();
}

int open_log_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw SystemError("cannot open log file " + path, errno);
  return fd;
}

}  // namespace

WorkerOutput::WorkerOutput(boost::asio::io_context& io, const WorkerSpec& spec, int local_rank,
                           const std::string& dir, const std::string& prefix,
                           const Filters& filters)
    : io_(io) {
  open_stream(streams_[0], true, spec, local_rank, dir, prefix, filters[0]);
  open_stream(streams_[1], false, spec, local_rank, dir, prefix, filters[1]);
}

WorkerOutput::~WorkerOutput() {
  for (auto& s : streams_) {
    close_stream(s);
    if (s.child_fd >= 0) ::close(s.child_fd);
    if (s.file_fd >= 0) ::close(s.file_fd);
  }
}

void WorkerOutput::open_stream(Stream& s, bool is_stdout, const WorkerSpec& spec, int local_rank,
                               const std::string& dir, const std::string& prefix,
                               std::shared_ptr<const LineFilter> filter) {
  auto has = is_stdout ? includes_stdout : includes_stderr;
  std::string path = dir + (is_stdout ? "/stdout.log" : "/stderr.log");
  bool hidden = !spec.local_ranks_filter.empty() && !spec.local_ranks_filter.count(local_rank);
  bool tee = has(spec.tee.for_rank(local_rank));
  // A stream both redirected and tee'd is tee'd, as in torchrun: console and file.
  if ((has(spec.redirects.for_rank(local_rank)) && !tee) || hidden) {
    s.child_fd = open_log_file(path);
    s.file_fd = ::fcntl(s.child_fd, F_DUPFD_CLOEXEC, 0);  // its size is the worker's progress
    return;
  }
  if (tee) s.file_fd = open_log_file(path);
  int fds[2];
  check_syscall(::pipe2(fds, O_CLOEXEC), "pipe for worker output");
  s.child_fd = fds[1];
  // Ours never blocks (the worker's end does): a readable pipe is read until EAGAIN.
  check_syscall(::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK),
                "non-blocking worker output pipe");
  s.pipe = std::make_unique<boost::asio::posix::stream_descriptor>(io_, fds[0]);
  int console = is_stdout ? STDOUT_FILENO : STDERR_FILENO;
  bool prefixed = tee || spec.prefix_all_output;
  s.writer = std::make_unique<LineWriter>(console, s.file_fd, prefixed ? prefix : "",
                                          std::move(filter), prefix);
}

uint64_t WorkerOutput::reads() const {
  uint64_t seen = reads_;
  for (const auto& s : streams_) {
    struct stat st {};
    if (!s.pipe && s.file_fd >= 0 && ::fstat(s.file_fd, &st) == 0) {
      seen += static_cast<uint64_t>(st.st_size);
    }
  }
  return seen;
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
  s.pipe->async_wait(boost::asio::posix::descriptor_base::wait_read,
                     [this, &s](const boost::system::error_code& ec) {
                       if (ec == boost::asio::error::operation_aborted || !s.pipe) return;
                       read_ready(s);
                     });
}

// Reads what the pipe holds, then waits for more; end of file or an error closes it.
void WorkerOutput::read_ready(Stream& s) {
  int fd = s.pipe->native_handle();
  for (int chunk = 0; chunk < kChunksPerWake; ++chunk) {
    ssize_t n = ::read(fd, read_buffer(), kReadChunk);
    if (n > 0) {
      ++reads_;
      s.writer->feed(read_buffer(), static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return read_more(s);
    close_stream(s);  // end of file, or the pipe broke
    if (on_eof_) on_eof_();
    return;
  }
  // Still full: let the others have the loop, then go on where we stopped.
  boost::asio::post(io_, [this, &s] {
    if (s.pipe) read_ready(s);
  });
}

void WorkerOutput::drain_and_close() {
  for (auto& s : streams_) {
    if (!s.pipe) continue;
    int fd = s.pipe->native_handle();
    ssize_t n = 0;
    while ((n = ::read(fd, read_buffer(), kReadChunk)) > 0 || (n < 0 && errno == EINTR)) {
      if (n > 0) s.writer->feed(read_buffer(), static_cast<size_t>(n));
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
