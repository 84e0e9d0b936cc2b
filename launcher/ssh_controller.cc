#include "launcher/ssh_controller.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>

#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "agent/failure_summary.h"
#include "agent/line_writer.h"
#include "common/error.h"
#include "net/job_token.h"

extern char** environ;

namespace asio = boost::asio;

namespace ddprun::launcher {
namespace {

constexpr int kUnreachable = 255;  // ssh's own status when it could not do its job

// The host name ssh would connect to for `host` (its config's HostName), by `ssh -G`.
std::string ssh_hostname(const SshJob& job, const std::string& host) {
  std::string command;
  for (const auto& w : job.ssh_cmd) command += shell_quote(w) + " ";
  command += "-G " + shell_quote(host) + " 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  std::string out;
  char buf[4096];
  size_t n = 0;
  while (pipe && (n = std::fread(buf, 1, sizeof(buf), pipe.get())) > 0) out.append(buf, n);
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("hostname ", 0) == 0) return line.substr(9);
  }
  // user@host: the part after '@'.
  return host.substr(host.find('@') == std::string::npos ? 0 : host.find('@') + 1);
}

std::string random_id() {
  std::random_device rd;
  std::ostringstream out;
  out << "ssh-" << std::hex << rd() << rd();
  return out.str();
}

// One host's ssh process and its three pipes.
struct Agent {
  std::string host;
  pid_t pid = -1;
  int stdin_fd = -1;
  std::unique_ptr<asio::posix::stream_descriptor> out, err;
  std::unique_ptr<agent::LineWriter> out_lines, err_lines;
  std::string err_tail;  // the last complete stderr line, for a failure message
  std::string err_partial;
  int open_streams = 2;
  std::optional<int> status;
  // One buffer per stream: reads of several ready streams may complete in one go.
  std::array<char, 16384> out_buf{}, err_buf{};
};

class Controller {
 public:
  explicit Controller(const SshJob& job)
      : job_(job), signals_(io_), children_(io_, SIGCHLD), keepalive_(io_) {
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) signals_.add(sig);
  }

  int run() {
    ::signal(SIGPIPE, SIG_IGN);
    wait_signals();
    wait_children();
    for (size_t k = 0; k < job_.hosts.size(); ++k) start(k);
    send_keepalives();
    io_.run();  // until every agent has exited and said all it had to say (see ended())
    return result();
  }

 private:
  void start(size_t k) {
    auto a = std::make_unique<Agent>();
    a->host = job_.hosts[k].name;
    int in[2], out[2], err[2];
    check_syscall(::pipe2(in, O_CLOEXEC), "pipe2");
    check_syscall(::pipe2(out, O_CLOEXEC), "pipe2");
    check_syscall(::pipe2(err, O_CLOEXEC), "pipe2");
    std::vector<std::string> argv_s = ssh_argv(job_, k);
    std::vector<char*> argv;
    for (auto& s : argv_s) argv.push_back(s.data());
    argv.push_back(nullptr);
    pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid == 0) {
      // Its own process group: a Ctrl-C reaches the controller only, which then stops
      // the agents in order. Killed with the controller.
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(kUnreachable);
      ::dup2(in[0], STDIN_FILENO);
      ::dup2(out[1], STDOUT_FILENO);
      ::dup2(err[1], STDERR_FILENO);
      ::signal(SIGPIPE, SIG_DFL);
      ::execvp(argv[0], argv.data());
      std::fprintf(stderr, "ddprun: cannot run %s: %s\n", argv[0], std::strerror(errno));
      ::_exit(kUnreachable);
    }
    check_syscall(pid, "fork");
    ::close(in[0]);
    ::close(out[1]);
    ::close(err[1]);
    if (!job_.token.empty()) {
      std::string line = job_.token + "\n";  // read by the agent before anything else
      if (::write(in[1], line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
        throw SystemError("writing the job token to the agent on " + a->host, errno);
      }
    }
    ::fcntl(in[1], F_SETFL, O_NONBLOCK);  // a keep-alive never blocks the loop
    a->pid = pid;
    a->stdin_fd = in[1];
    a->out = std::make_unique<asio::posix::stream_descriptor>(io_, out[0]);
    a->err = std::make_unique<asio::posix::stream_descriptor>(io_, err[0]);
    a->out_lines = std::make_unique<agent::LineWriter>(STDOUT_FILENO, -1, "");
    a->err_lines = std::make_unique<agent::LineWriter>(STDERR_FILENO, -1, "");
    Agent* raw = a.get();
    agents_.push_back(std::move(a));
    read(raw, *raw->out, false);
    read(raw, *raw->err, true);
  }

  void read(Agent* a, asio::posix::stream_descriptor& d, bool is_err) {
    auto& buf = is_err ? a->err_buf : a->out_buf;
    d.async_read_some(asio::buffer(buf),
                      [this, a, &d, &buf, is_err](boost::system::error_code ec, size_t n) {
                        if (ec) {
                          (is_err ? a->err_lines : a->out_lines)->finish();
                          --a->open_streams;
                          return ended();
                        }
                        (is_err ? a->err_lines : a->out_lines)->feed(buf.data(), n);
                        if (is_err) keep_tail(*a, buf.data(), n);
                        read(a, d, is_err);
                      });
  }

  static void keep_tail(Agent& a, const char* data, size_t n) {
    a.err_partial.append(data, n);
    for (size_t nl; (nl = a.err_partial.find('\n')) != std::string::npos;) {
      if (nl > 0) a.err_tail = a.err_partial.substr(0, nl);
      a.err_partial.erase(0, nl + 1);
    }
    if (a.err_partial.size() > 4096) a.err_partial.clear();
  }

  void wait_children() {
    children_.async_wait([this](const boost::system::error_code& ec, int) {
      if (ec) return;
      reap();
      wait_children();
      ended();
    });
  }

  void reap() {
    for (auto& a : agents_) {
      if (a->status) continue;
      int st = 0;
      if (::waitpid(a->pid, &st, WNOHANG) != a->pid) continue;
      a->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      close_stdin(*a);
      if (*a->status == kUnreachable && !stopping_) {
        unreachable_ = true;
        std::cerr << "ddprun: error: host " << a->host << " could not be reached, its agent "
                  << "not started, or its connection was lost (ssh exited 255"
                  << (a->err_tail.empty() ? "" : ": ") << a->err_tail
                  << "); stopping the other hosts\n";
        stop_all();
      }
    }
  }

  void wait_signals() {
    signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
      if (ec) return;
      if (signalled_ != 0) {
        std::cerr << "ddprun: received " << agent::signal_name(sig)
                  << " again; killing the ssh connections\n";
        for (auto& a : agents_)
          if (!a->status) ::kill(a->pid, SIGKILL);
      } else {
        signalled_ = sig;
        std::cerr << "ddprun: received " << agent::signal_name(sig) << "; stopping the agents on "
                  << agents_.size() << " host(s)\n";
        stop_all();
      }
      wait_signals();
    });
  }

  // A line on every agent's standard input each keep-alive interval: an agent that hears
  // nothing for 3 of them (--stdin_timeout) takes its controller as lost and stops, which
  // ssh alone does not notice when a connection drops without a word.
  void send_keepalives() {
    for (auto& a : agents_) {
      if (a->stdin_fd >= 0) (void)!::write(a->stdin_fd, "\n", 1);  // a full pipe: skipped
    }
    keepalive_.expires_after(std::chrono::seconds(job_.keepalive_s));
    keepalive_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) send_keepalives();
    });
  }

  // Closing an agent's standard input is its stop signal (--stop_on_stdin_close).
  void stop_all() {
    stopping_ = true;
    for (auto& a : agents_) close_stdin(*a);
  }

  static void close_stdin(Agent& a) {
    if (a.stdin_fd >= 0) ::close(a.stdin_fd);
    a.stdin_fd = -1;
  }

  // The loop ends with the last agent: its signals' and keep-alives' waits with it.
  void ended() {
    if (finished()) io_.stop();
  }

  bool finished() const {
    for (const auto& a : agents_)
      if (!a->status || a->open_streams > 0) return false;
    return true;
  }

  int result() const {
    if (signalled_ != 0) return 128 + signalled_;
    if (unreachable_) return kUnreachable;
    if (*agents_.front()->status != 0) return *agents_.front()->status;
    for (const auto& a : agents_)
      if (*a->status != 0) return *a->status;
    return 0;
  }

  const SshJob& job_;
  asio::io_context io_;
  asio::signal_set signals_;
  asio::signal_set children_;
  asio::steady_timer keepalive_;
  std::vector<std::unique_ptr<Agent>> agents_;
  int signalled_ = 0;
  bool stopping_ = false;
  bool unreachable_ = false;
};

}  // namespace

void prepare_ssh_job(SshJob& job) {
  std::vector<std::string> environ_entries;
  for (char** e = environ; *e != nullptr; ++e) environ_entries.emplace_back(*e);
  std::string ddprun_env;
  if (std::ifstream in(".ddprun_env"); in) {
    std::stringstream text;
    text << in.rdbuf();
    ddprun_env = text.str();
  }
  job.env = exported_env(environ_entries, ddprun_env, job.exports);
  job.cwd = std::filesystem::current_path().string();
  if (job.remote_ddprun.empty())
    job.remote_ddprun = std::filesystem::read_symlink("/proc/self/exe");
  if (job.master_addr.empty()) job.master_addr = ssh_hostname(job, job.hosts.front().name);
  if (job.master_port == 0) {
    std::random_device rd;
    job.master_port = 20000 + static_cast<int>(rd() % 12000);
  }
  if (job.run_id.empty()) job.run_id = random_id();
  job.token = net::job_token::new_challenge();  // 32 random bytes, a fresh one per job
}

int run_ssh_job(const SshJob& job) { return Controller(job).run(); }

}  // namespace ddprun::launcher
