#include "bench/store_bench_servers.h"

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace ddprun::bench {

void pin_to_cpu(int cpu) {
  int n = static_cast<int>(std::thread::hardware_concurrency());
  if (n < 2) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu % n, &set);
  ::sched_setaffinity(0, sizeof(set), &set);
}

store::TcpStoreClient::Options client_options(store::tcpstore::Numbering numbering) {
  store::TcpStoreClient::Options o;
  o.timeout = std::chrono::seconds(60);
  o.numbering = numbering;
  return o;
}

ServerProcess::ServerProcess(std::vector<std::string> argv) {
  int out[2];
  int in[2];
  if (::pipe(out) != 0 || ::pipe(in) != 0) throw std::runtime_error("pipe");
  pid_ = ::fork();
  if (pid_ == 0) {
    pin_to_cpu(0);  // the server's core; its threads inherit it
    ::dup2(out[1], 1);
    ::dup2(in[0], 0);
    ::close(out[0]);
    ::close(in[1]);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(in[0]);
  stdin_ = in[1];
  // Read up to the newline; keep the pipe open so the child never writes to a
  // closed pipe.
  stdout_ = out[0];
  std::string line;
  char c;
  while (::read(stdout_, &c, 1) == 1 && c != '\n') line += c;
  port_ = std::atoi(line.c_str());
  if (port_ == 0) throw std::runtime_error(argv[0] + " did not start a store server");
}

ServerProcess::~ServerProcess() {
  ::close(stdin_);
  ::close(stdout_);
  int status;
  ::waitpid(pid_, &status, 0);
}

std::vector<std::string> torch1_server(const std::string& python) {
  return {python, std::string(DDPRUN_BENCH_DIR) + "/torch_store_server.py"};
}

std::vector<std::string> torch2_server(const std::string& root) {
  return {std::string(DDPRUN_BENCH_DIR) + "/../tests/torch2/in_root.sh", root, "python3",
          std::string(DDPRUN_BENCH_DIR) + "/torch_store_server.py"};
}

}  // namespace ddprun::bench
