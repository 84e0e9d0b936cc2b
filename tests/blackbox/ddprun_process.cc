#include "tests/blackbox/ddprun_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "tests/helpers/scratch.h"

extern char** environ;

namespace ddprun::test {

std::string ddprun_binary() { return DDPRUN_BINARY; }
std::string test_worker_binary() { return DDPRUN_TEST_WORKER; }
std::string store_worker_binary() { return DDPRUN_STORE_WORKER; }

std::string make_temp_dir() { return scratch_dir("ddprun_test_"); }

DdprunProcess::DdprunProcess(const std::vector<std::string>& args,
                             const std::map<std::string, std::optional<std::string>>& env) {
  std::vector<std::string> env_entries;
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    if (!env.count(entry.substr(0, entry.find('=')))) env_entries.push_back(entry);
  }
  for (const auto& [k, v] : env)
    if (v) env_entries.push_back(k + "=" + *v);
  std::vector<std::string> argv_s{ddprun_binary()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& s : env_entries) envp.push_back(s.data());
  envp.push_back(nullptr);

  int out[2];
  int err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe failed");
  }
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(99);
  }
  ::close(out[1]);
  ::close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
}

DdprunProcess::~DdprunProcess() {
  if (!exit_code_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) ::close(out_fd_);
  if (err_fd_ >= 0) ::close(err_fd_);
}

int DdprunProcess::wait(std::chrono::seconds timeout) {
  if (exit_code_) return *exit_code_;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (out_fd_ >= 0 || err_fd_ >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    read_output(static_cast<int>(left.count()));
  }
  if (out_fd_ >= 0 || err_fd_ >= 0) {  // timed out
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    exit_code_ = -1;
    return -1;
  }
  int status = 0;
  ::waitpid(pid_, &status, 0);
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return *exit_code_;
}

void DdprunProcess::read_output(int wait_ms) {
  char buf[65536];
  pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
  if (::poll(fds, 2, wait_ms) <= 0) return;
  for (int i = 0; i < 2; ++i) {
    int& fd = i == 0 ? out_fd_ : err_fd_;
    if (fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n > 0) {
      (i == 0 ? out_ : err_).append(buf, static_cast<size_t>(n));
    } else {
      ::close(fd);
      fd = -1;
    }
  }
}

const std::string& DdprunProcess::err_so_far() {
  read_output(0);
  return err_;
}

Finished run_ddprun(const std::vector<std::string>& args,
                    const std::map<std::string, std::optional<std::string>>& env) {
  DdprunProcess p(args, env);
  int code = p.wait();
  return {code, p.out(), p.err()};
}

int connect_loopback(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) return fd;
  ::close(fd);
  return -1;
}

bool process_alive(pid_t pid) {
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return false;
  size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z' &&
         stat[paren + 2] != 'X';
}

// With read(2), not a stream: a /proc file whose process exits while it is read fails
// with ESRCH, which libstdc++'s filebuf throws as an exception; here it ends the text.
std::string read_file(const std::string& path) {
  std::string text;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) text.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return text;
}

std::vector<std::string> lines_starting_with(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  return out;
}

std::vector<std::string> csv_points(const std::string& csv, const std::string& prefix) {
  std::vector<std::string> out;
  for (auto& line : lines_starting_with(csv, prefix)) {
    // node,rank,attempt,seq,...: config and summary rows have no seq.
    std::istringstream fields(line);
    std::string seq;
    for (int i = 0; i < 4; ++i) std::getline(fields, seq, ',');
    if (!seq.empty()) out.push_back(std::move(line));
  }
  return out;
}

}  // namespace ddprun::test
