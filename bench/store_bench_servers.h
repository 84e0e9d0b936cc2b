#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "store/tcpstore/tcp_store_client.h"

// The servers ddprun_store_bench measures and where they run: each in a process of its
// own (ddprun's, torch 1.13's through Python, torch 2.14's in the forky root), on core 0,
// its clients on core 1.
namespace ddprun::bench {

// Server on core 0, client drivers on core 1 (when there are two): on a 2-core
// machine the client would otherwise compete with the server it measures.
void pin_to_cpu(int cpu);

// A benchmark client's options: 60 s to answer, the wire numbering `numbering`.
store::TcpStoreClient::Options client_options(
    store::tcpstore::Numbering numbering = store::tcpstore::Numbering::kV113);

// A store server in a child process, pinned to core 0; its port comes on the child's
// stdout, and closing its stdin ends it.
class ServerProcess {
 public:
  explicit ServerProcess(std::vector<std::string> argv);
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
  int stdout_ = -1;
  int port_ = 0;
};

// torch 1.13's own server, run by `python` (Debian's python3-torch).
std::vector<std::string> torch1_server(const std::string& python);
// torch 2.14's own server, run in the forky root at `root`.
std::vector<std::string> torch2_server(const std::string& root);

}  // namespace ddprun::bench
