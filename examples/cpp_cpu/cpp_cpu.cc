// A C++ worker with no GPU: a barrier and an all-gather of ranks through the store
// ddprun hosts for its workers, and metrics logged to the job's shared run.
//
//   ddprun --standalone --nproc_per_node=4 --no_python ./cpp_cpu
//
// Reads the environment every launcher gives its workers (RANK, WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RESTART_COUNT). Exits 0 when every rank
// gathered every other rank's value, 1 otherwise.
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "store/tcpstore/tcp_store_client.h"
#include "tracking/ddprun_tracking.hpp"

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) {
    std::cerr << "cpp_cpu: " << name << " is not set; run me under ddprun or torchrun\n";
    std::exit(2);
  }
  return v;
}

constexpr std::chrono::seconds kTimeout{60};

// Everyone adds one to a counter; the last to arrive opens the gate.
void barrier(ddprun::store::Store& store, const std::string& name, int world) {
  if (store.add(name + "/arrived", 1) == world) store.set(name + "/open", "1");
  store.wait({name + "/open"}, kTimeout);
}

}  // namespace

int main() {
  int rank = std::stoi(env("RANK"));
  int world = std::stoi(env("WORLD_SIZE"));
  // Keys of one attempt never meet those of another.
  std::string prefix = "cpp_cpu/" + env("TORCHELASTIC_RESTART_COUNT") + "/";
  ddprun::store::TcpStoreClient store(env("MASTER_ADDR"), std::stoi(env("MASTER_PORT")),
                                           {.timeout = kTimeout});
  ddprun::track::config({{"example", "cpp_cpu"}, {"world_size", std::to_string(world)}});

  barrier(store, prefix + "start", world);

  // All-gather: each rank publishes rank*rank, then reads everyone's.
  store.set(prefix + "value/" + std::to_string(rank), std::to_string(rank * rank));
  std::vector<std::string> keys;
  for (int r = 0; r < world; ++r) keys.push_back(prefix + "value/" + std::to_string(r));
  std::vector<std::string> values = store.multi_get(keys, kTimeout);
  long sum = 0;
  bool ok = true;
  for (int r = 0; r < world; ++r) {
    ok = ok && std::stol(values[r]) == static_cast<long>(r) * r;
    sum += std::stol(values[r]);
  }
  long expected = static_cast<long>(world - 1) * world * (2 * world - 1) / 6;
  ok = ok && sum == expected;
  ddprun::track::log({{"gathered_sum", static_cast<double>(sum)},
                      {"ok", ok ? 1.0 : 0.0}},
                     0);
  ddprun::track::summary({{"all_gather", ok ? "ok" : "wrong"}});

  barrier(store, prefix + "end", world);  // nobody leaves while others still read
  std::cout << "rank " << rank << "/" << world << ": all-gather sum " << sum
            << (ok ? " ok" : " WRONG") << std::endl;
  return ok ? 0 : 1;
}
