// Hosts a ddprun TCPStore server for tests and benchmarks: prints the port it bound
// and serves until its standard input closes.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "store/tcpstore/tcp_store_server.h"

int main(int argc, char** argv) {
  int port = argc > 1 ? std::atoi(argv[1]) : 0;
  ddprun::store::TcpStoreServer server("", static_cast<uint16_t>(port));
  std::printf("%d\n", server.port());
  std::fflush(stdout);
  char c;
  while (::read(STDIN_FILENO, &c, 1) > 0) {
  }
  return 0;
}
