// A worker that uses ddprun's store the way a torch 2.x worker does (no attempt
// prefix), for black-box tests of the agent store across restarts:
//   ddprun_store_worker leak_check  attempt 0: SET "/leak" and fail; attempt 1: succeed
//                                   only if "/leak" is gone (prints what it found)
//   ddprun_store_worker poll DIR        create DIR/w<WORLD>.r<RANK>.a<ATTEMPT>, then read
//                                       the store every 20 ms; when the store cuts it off,
//                                       create DIR/cut.w<WORLD>.r<RANK> and exit 5
//   ddprun_store_worker count_keys PORT FILE LAST
//                                   rank 0 appends "<attempt> <keys>" to FILE: the number
//                                   of keys in the store at 127.0.0.1:PORT (the rendezvous
//                                   store), then fails until attempt LAST; the other
//                                   ranks succeed (rank 0's failure restarts them)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "store/tcpstore/tcp_store_client.h"

namespace {

int poll(const std::string& dir) {
  const char* addr = std::getenv("MASTER_ADDR");
  const char* port = std::getenv("MASTER_PORT");
  std::string world = std::getenv("WORLD_SIZE") ? std::getenv("WORLD_SIZE") : "?";
  std::string rank = std::getenv("RANK") ? std::getenv("RANK") : "?";
  std::string attempt =
      std::getenv("TORCHELASTIC_RESTART_COUNT") ? std::getenv("TORCHELASTIC_RESTART_COUNT") : "?";
  if (!addr || !port) return 65;
  ddprun::store::TcpStoreClient store(addr, std::atoi(port));
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

int count_keys(int port, const std::string& file, const std::string& last) {
  const char* rank = std::getenv("RANK");
  const char* attempt = std::getenv("TORCHELASTIC_RESTART_COUNT");
  if (!rank || !attempt) return 65;
  if (std::string(rank) != "0") return 0;
  ddprun::store::TcpStoreClient store("127.0.0.1", port);
  std::ofstream(file, std::ios::app) << attempt << " " << store.num_keys() << "\n";
  return last == attempt ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 2 && std::string(argv[1]) == "poll") return poll(argv[2]);
  if (argc > 4 && std::string(argv[1]) == "count_keys") {
    return count_keys(std::atoi(argv[2]), argv[3], argv[4]);
  }
  if (argc < 2 || std::string(argv[1]) != "leak_check") return 64;
  const char* addr = std::getenv("MASTER_ADDR");
  const char* port = std::getenv("MASTER_PORT");
  const char* attempt = std::getenv("TORCHELASTIC_RESTART_COUNT");
  if (!addr || !port || !attempt) return 65;
  ddprun::store::TcpStoreClient store(addr, std::atoi(port));
  if (std::string(attempt) == "0") {
    store.set("/leak", "from attempt 0");
    store.add("/arrived", 1);
    return 3;
  }
  bool leaked = store.check({"/leak"});
  std::printf("attempt %s sees /leak: %s\n", attempt, leaked ? "yes" : "no");
  return leaked ? 4 : 0;
}
