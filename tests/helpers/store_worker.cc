// A worker that uses ddprun's store the way a torch 2.x worker does (no attempt
// prefix), for black-box tests of the agent store across restarts:
//   ddprun_store_worker leak_check  attempt 0: SET "/leak" and fail; attempt 1: succeed
//                                   only if "/leak" is gone (prints what it found)
//   ddprun_store_worker poll DIR        create DIR/w<WORLD>.r<RANK>.a<ATTEMPT>, then read
//                                       the store every 20 ms; when the store cuts it off,
//                                       create DIR/cut.w<WORLD>.r<RANK> and exit 5
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "rendezvous/tcp_store_client.h"

namespace {

int poll(const std::string& dir) {
  const char* addr = std::getenv("MASTER_ADDR");
  const char* port = std::getenv("MASTER_PORT");
  std::string world = std::getenv("WORLD_SIZE") ? std::getenv("WORLD_SIZE") : "?";
  std::string rank = std::getenv("RANK") ? std::getenv("RANK") : "?";
  std::string attempt = std::getenv("TORCHELASTIC_RESTART_COUNT")
                            ? std::getenv("TORCHELASTIC_RESTART_COUNT")
                            : "?";
  if (!addr || !port) return 65;
  ddprun::rendezvous::TcpStoreClient store(addr, std::atoi(port));
  std::ofstream(dir + "/w" + world + ".r" + rank + ".a" + attempt) << "";
  try {
    while (true) {
      store.check({"/poll"});
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  } catch (const std::exception& e) {
    std::ofstream(dir + "/cut.w" + world + ".r" + rank) << e.what();
  }
  return 5;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 2 && std::string(argv[1]) == "poll") return poll(argv[2]);
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
