// A worker that uses ddprun's store the way a torch 2.x worker does (no attempt
// prefix), for black-box tests of the agent store across restarts:
//   ddprun_store_worker leak_check  attempt 0: SET "/leak" and fail; attempt 1: succeed
//                                   only if "/leak" is gone (prints what it found)
#include <cstdio>
#include <cstdlib>
#include <string>

#include "rendezvous/tcp_store_client.h"

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) != "leak_check") return 64;
  const char* addr = std::getenv("MASTER_ADDR");
  const char* port = std::getenv("MASTER_PORT");
  const char* attempt = std::getenv("TORCHELASTIC_RESTART_COUNT");
  if (!addr || !port || !attempt) return 65;
  ddprun::rendezvous::TcpStoreClient store(addr, std::atoi(port));
  if (std::string(attempt) == "0") {
    store.set("/leak", "from attempt 0");
    store.add("/arrived", 1);
    return 3;
  }
  bool leaked = store.check({"/leak"});
  std::printf("attempt %s sees /leak: %s\n", attempt, leaked ? "yes" : "no");
  return leaked ? 4 : 0;
}
