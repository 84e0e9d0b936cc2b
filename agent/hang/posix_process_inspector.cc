#include "agent/hang/posix_process_inspector.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <spdlog/spdlog.h>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>

#include "agent/executable.h"
#include "agent/hang/hang_options.h"
#include "agent/process_launcher.h"
#include "common/descriptor_ready.h"
#include "os/proc_stat.h"
#include "os/process_probe.h"

namespace ddprun::agent {
namespace {

using std::chrono::milliseconds;

// A Python dump is complete when its file stops growing for this long...
constexpr milliseconds kDumpPoll{50};
constexpr int kStablePolls = 2;
// ...and is given up after this long (a worker that blocks the signal, or is stopped).
constexpr milliseconds kDumpTimeout{3000};
// eu-stack or gdb on a process in uninterruptible sleep may never finish.
constexpr milliseconds kNativeTimeout{10'000};
// PyTorch reads its dump pipe once a second (TORCH_NCCL_COORD_CHECK_MILSEC) and then
// writes the dump; 2.11 took 5.8 and 6.3 s after the poke on an H200 (gpu_check).
constexpr milliseconds kRecordPoll{100};
constexpr milliseconds kRecordTimeout{15'000};

// A file's size and modification time: a new dump changes them.
struct FileStamp {
  int64_t size = -1;
  int64_t mtime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};

FileStamp stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {static_cast<int64_t>(st.st_size), st.st_mtim.tv_sec * 1'000'000'000 + st.st_mtim.tv_nsec};
}

int64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

std::string read_from(const std::string& path, int64_t offset) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(offset);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Every thread's native stack of `pid`: eu-stack (elfutils), else gdb in batch mode;
// empty when neither is on PATH.
std::vector<std::string> native_stack_command(pid_t pid) {
  std::string id = std::to_string(pid);
  for (const char* tool : {"eu-stack", "gdb"}) {
    std::string path;
    try {
      path = resolve_executable(tool);
    } catch (const ExecError&) {
      continue;
    }
    if (std::string(tool) == "eu-stack") return {path, "-p", id};
    return {path, "-batch", "-nx", "-p", id, "-ex", "thread apply all bt"};
  }
  return {};
}

}  // namespace

struct PosixProcessInspector::Capture {
  std::vector<StackRequest> requests;
  std::vector<CapturedStacks> results;
  std::vector<int64_t> dump_start;       // size of each Python dump file before the signal
  std::vector<FileStamp> record_before;  // each flight recorder dump before the request
  std::vector<FileStamp> record_read;    // and when it was last read
  std::vector<std::unique_ptr<Timer>> dump_polls;    // per request: the Python dump's
  std::vector<std::unique_ptr<Timer>> record_polls;  // per request: the NCCL dump's
  std::vector<std::unique_ptr<Timer>> tool_limits;   // per request: the stack tool's
  std::vector<std::unique_ptr<boost::asio::posix::stream_descriptor>> exits;
  int pending = 0;
  OnStacks done;

  void finish_one(boost::asio::io_context& io) {
    if (--pending > 0) return;
    boost::asio::post(io,
                      [done = std::move(done), results = std::move(results)] { done(results); });
  }
};

PosixProcessInspector::PosixProcessInspector(boost::asio::io_context& io, ProcessLauncher& launcher,
                                             Clock& clock)
    : io_(io), launcher_(launcher), clock_(clock) {}

PosixProcessInspector::~PosixProcessInspector() = default;

ProcessLook PosixProcessInspector::look(pid_t pid) {
  ProcessLook look;
  os::ProcStat st;
  if (!os::read_proc_stat(pid, st)) return look;
  static const long kTicks = ::sysconf(_SC_CLK_TCK);
  look.alive = st.state != 'Z';
  look.state = st.state;
  look.cpu = milliseconds(static_cast<int64_t>((st.utime + st.stime) * 1000 / kTicks));
  // Where a process that cannot run waits: uninterruptible sleep, or stopped.
  if (st.state == 'D' || st.state == 'T' || st.state == 't')
    look.wait_channel = os::wait_channel(pid);
  return look;
}

void PosixProcessInspector::capture(std::vector<StackRequest> requests, OnStacks done) {
  auto c = std::make_shared<Capture>();
  size_t n = requests.size();
  c->requests = std::move(requests);
  c->results.resize(n);
  c->dump_start.resize(n);
  c->record_before.resize(n);
  c->record_read.resize(n);
  c->dump_polls.resize(n);
  c->record_polls.resize(n);
  c->tool_limits.resize(n);
  c->exits.resize(n);
  c->pending = static_cast<int>(n * 3) + 1;
  c->done = std::move(done);
  for (size_t i = 0; i < n; ++i) {
    capture_flight_record(c, i);  // first: the worker dumps while its stacks are taken
    capture_python(c, i);
    capture_native(c, i);
  }
  c->finish_one(io_);  // the +1: nothing finishes before every capture has begun
}

void PosixProcessInspector::capture_python(const std::shared_ptr<Capture>& c, size_t i) {
  const StackRequest& r = c->requests[i];
  if (r.pid <= 0) return c->finish_one(io_);  // gone already
  if (r.python_dump_file.empty() || !os::catches_signal(r.pid, stack_dump_signal())) {
    if (!r.python_dump_file.empty()) c->results[i].note = "no Python stack dump handler";
    return c->finish_one(io_);
  }
  // A process that cannot run (stopped, traced, in uninterruptible sleep) handles no
  // signal: its dump would be waited for in vain, kDumpTimeout longer to recover.
  if (char state = look(r.pid).state; state == 'T' || state == 't' || state == 'D') {
    c->results[i].note = std::string("no Python stack dump: it cannot run (state ") + state + ")";
    return c->finish_one(io_);
  }
  c->dump_start[i] = file_size(r.python_dump_file);
  ::kill(r.pid, stack_dump_signal());
  c->dump_polls[i] = clock_.make_timer();
  poll_dump(c, i, c->dump_start[i], 0, 0);
}

// Done when the dump has grown and then stopped growing (`stable` polls in a row), or
// at the timeout (`polls` in all): a worker that cannot run (stopped, in D state) never
// writes it, and the capture must not wait for it.
void PosixProcessInspector::poll_dump(const std::shared_ptr<Capture>& c, size_t i,
                                      int64_t last_size, int stable, int polls) {
  c->dump_polls[i]->start(kDumpPoll, [this, c, i, last_size, stable, polls] {
    const std::string& path = c->requests[i].python_dump_file;
    int64_t size = file_size(path);
    int now_stable = size == last_size && size > c->dump_start[i] ? stable + 1 : 0;
    bool timed_out = (polls + 1) * kDumpPoll >= kDumpTimeout;
    if (now_stable < kStablePolls && !timed_out)
      return poll_dump(c, i, size, now_stable, polls + 1);
    c->results[i].python = read_from(path, c->dump_start[i]);
    if (c->results[i].python.empty()) c->results[i].note = "the Python stack dump did not come";
    c->finish_one(io_);
  });
}

void PosixProcessInspector::capture_flight_record(const std::shared_ptr<Capture>& c, size_t i) {
  const StackRequest& r = c->requests[i];
  if (r.pid <= 0 || r.flight_recorder.pipe.empty()) return c->finish_one(io_);
  c->record_before[i] = stamp(r.flight_recorder.dump);
  // Not a torch worker with a NCCL process group (no FIFO, or nobody reading it).
  if (!request_flight_record(r.flight_recorder.pipe)) return c->finish_one(io_);
  c->record_polls[i] = clock_.make_timer();
  poll_flight_record(c, i, 0);
}

// PyTorch writes the dump in place: it is whole once it reads as one.
void PosixProcessInspector::poll_flight_record(const std::shared_ptr<Capture>& c, size_t i,
                                               int polls) {
  c->record_polls[i]->start(kRecordPoll, [this, c, i, polls] {
    const std::string& path = c->requests[i].flight_recorder.dump;
    FileStamp now = stamp(path);
    bool fresh = now.size > 0 && !(now == c->record_before[i]);
    // Read again only what changed since the last read (a dump is read whole).
    if (fresh && now.size <= kMaxFlightRecordBytes && !(now == c->record_read[i])) {
      c->record_read[i] = now;
      if (auto record = read_flight_record(read_from(path, 0))) {
        c->results[i].flight_record = std::move(*record);
        return c->finish_one(io_);
      }
    }
    if ((polls + 1) * kRecordPoll < kRecordTimeout) return poll_flight_record(c, i, polls + 1);
    if (fresh) {
      spdlog::warn(
          "pid {}: its NCCL flight recorder dump {} could not be read (a format ddprun "
          "does not know, or larger than {} MiB)",
          c->requests[i].pid, path, kMaxFlightRecordBytes >> 20);
    } else {
      spdlog::warn("pid {}: asked for its NCCL flight recorder dump; none came in {} s to {}",
                   c->requests[i].pid, kRecordTimeout.count() / 1000, path);
    }
    c->finish_one(io_);
  });
}

void PosixProcessInspector::capture_native(const std::shared_ptr<Capture>& c, size_t i) {
  const StackRequest& r = c->requests[i];
  if (r.pid <= 0) return c->finish_one(io_);
  std::vector<std::string> argv = native_stack_command(r.pid);
  CapturedStacks& out = c->results[i];
  if (argv.empty()) {
    if (out.note.empty()) out.note = "no native stack tool (install elfutils or gdb)";
    return c->finish_one(io_);
  }
  int fd = ::open(r.native_out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  pid_t tool = -1;
  try {
    SpawnOptions opts;
    opts.executable = argv.front();
    opts.argv = argv;
    opts.stdout_fd = fd;
    opts.stderr_fd = fd;
    tool = launcher_.spawn(std::move(opts));
  } catch (const std::exception& e) {
    out.note = std::string("could not run ") + argv.front() + ": " + e.what();
  }
  if (fd >= 0) ::close(fd);
  // Reaped by the launcher on the loop, so it cannot be gone before this pidfd exists.
  int pidfd = tool > 0 ? static_cast<int>(::syscall(SYS_pidfd_open, tool, 0)) : -1;
  if (pidfd < 0) {
    if (tool > 0) c->results[i].native = read_from(r.native_out, 0);
    return c->finish_one(io_);
  }
  c->exits[i] = std::make_unique<boost::asio::posix::stream_descriptor>(io_, pidfd);
  c->tool_limits[i] = clock_.make_timer();
  c->tool_limits[i]->start(kNativeTimeout, [this, tool] { launcher_.signal_group(tool, SIGKILL); });
  when_ready(*c->exits[i], boost::asio::posix::stream_descriptor::wait_read,
             [this, c, i](const boost::system::error_code&) {
               c->tool_limits[i]->cancel();
               c->results[i].native = read_from(c->requests[i].native_out, 0);
               if (c->results[i].native.empty()) {
                 c->results[i].note = "the native stack tool printed nothing";
               }
               c->finish_one(io_);
             });
}

}  // namespace ddprun::agent
