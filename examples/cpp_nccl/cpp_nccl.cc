// A C++ program that bootstraps NCCL itself, through the store ddprun hosts for its
// workers: rank 0 creates the ncclUniqueId and publishes it, every rank reads it,
// joins the communicator, all-reduces a buffer and checks the sum.
//
//   ddprun --standalone --nproc_per_node=gpu --no_python ./cpp_nccl
//
// Exits 0 when every element holds 1 + 2 + ... + WORLD_SIZE, 1 otherwise.
#include <cuda_runtime.h>
#include <nccl.h>

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
    std::cerr << "cpp_nccl: " << name << " is not set; run me under ddprun or torchrun\n";
    std::exit(2);
  }
  return v;
}

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::cerr << "cpp_nccl: " << what << ": " << cudaGetErrorString(e) << "\n";
    std::exit(1);
  }
}

void check_nccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) {
    std::cerr << "cpp_nccl: " << what << ": " << ncclGetErrorString(r) << "\n";
    std::exit(1);
  }
}

constexpr std::chrono::seconds kTimeout{120};
constexpr size_t kCount = 1 << 20;

}  // namespace

int main() {
  int rank = std::stoi(env("RANK"));
  int world = std::stoi(env("WORLD_SIZE"));
  int local_rank = std::stoi(env("LOCAL_RANK"));
  std::string id_key = "cpp_nccl/" + env("TORCHELASTIC_RESTART_COUNT") + "/unique_id";
  ddprun::store::TcpStoreClient store(env("MASTER_ADDR"), std::stoi(env("MASTER_PORT")),
                                           {.timeout = kTimeout});
  check_cuda(cudaSetDevice(local_rank), "cudaSetDevice");

  ncclUniqueId id;
  if (rank == 0) {
    check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    store.set(id_key, std::string(reinterpret_cast<const char*>(&id), sizeof(id)));
  } else {
    std::string bytes = store.get(id_key, kTimeout);
    if (bytes.size() != sizeof(id)) {
      std::cerr << "cpp_nccl: the unique id in the store has " << bytes.size() << " bytes\n";
      return 1;
    }
    std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(&id));
  }
  ncclComm_t comm;
  check_nccl(ncclCommInitRank(&comm, world, id, rank), "ncclCommInitRank");

  std::vector<float> host(kCount, static_cast<float>(rank + 1));
  float* device = nullptr;
  cudaStream_t stream;
  check_cuda(cudaStreamCreate(&stream), "cudaStreamCreate");
  check_cuda(cudaMalloc(&device, kCount * sizeof(float)), "cudaMalloc");
  check_cuda(cudaMemcpy(device, host.data(), kCount * sizeof(float), cudaMemcpyHostToDevice),
             "cudaMemcpy");
  auto start = std::chrono::steady_clock::now();
  check_nccl(ncclAllReduce(device, device, kCount, ncclFloat, ncclSum, comm, stream),
             "ncclAllReduce");
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  check_cuda(cudaMemcpy(host.data(), device, kCount * sizeof(float), cudaMemcpyDeviceToHost),
             "cudaMemcpy");

  float expected = static_cast<float>(world) * static_cast<float>(world + 1) / 2;
  bool ok = true;
  for (float v : host) ok = ok && v == expected;
  ddprun::track::log({{"allreduce_seconds", seconds}, {"ok", ok ? 1.0 : 0.0}}, 0);
  std::cout << "rank " << rank << "/" << world << ": all-reduce of " << kCount << " floats "
            << (ok ? "ok" : "WRONG") << " in " << seconds * 1e3 << " ms" << std::endl;

  cudaFree(device);
  cudaStreamDestroy(stream);
  ncclCommDestroy(comm);
  return ok ? 0 : 1;
}
