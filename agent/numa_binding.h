#pragma once

#include <string>
#include <vector>

#include "os/cpu_topology.h"

namespace ddprun::agent {

/// `--numa_binding` (torchrun 2.x's modes): which CPUs each local worker may run on.
enum class NumaMode {
  kOff,
  kNode,         // the CPUs of its GPU's NUMA node
  kSocket,       // the CPUs of the socket holding that node
  kExclusive,    // physical cores of that node, each worker its own share
  kCoreComplex,  // one L3-sharing group (core complex) of that node per worker
};

/// "node", "socket", "exclusive", "core-complex" (or "off"); throws UsageError naming
/// `source` and the choices.
NumaMode parse_numa_mode(const std::string& source, const std::string& text);
const char* numa_mode_name(NumaMode mode);

/// One worker's binding.
struct CpuBinding {
  std::vector<int> cpus;  // ascending
  int node = -1;          // the NUMA node it was placed on
  int memory_node = -1;   // memory is preferred from here (-1: left to the kernel)
  /// "CPUs 0-7,32-39 (NUMA node 0, memory from node 0)".
  std::string describe() const;
};

/// "0-3,8" for {0,1,2,3,8}.
std::string format_cpu_list(const std::vector<int>& cpus);

/// The binding of each of `workers` local workers. `gpu_nodes[i]` is the NUMA node of
/// local rank i's GPU (ranks beyond the GPUs wrap around); without GPUs, workers are
/// spread over the NUMA nodes in order, in even blocks. In `exclusive` the workers on a
/// node split its physical cores (every hardware thread of a core goes with it), the
/// lowest local ranks getting one more when they do not divide; in `core-complex` the
/// workers on a node take its L3 groups in order. Throws Error naming the node when a
/// binding is impossible (more workers than cores or core complexes there).
std::vector<CpuBinding> plan_numa_binding(const os::CpuTopology& topology, NumaMode mode,
                                          int workers, const std::vector<int>& gpu_nodes);

/// The NUMA node of each GPU a worker sees, in CUDA's order: the driver's GPUs (PCI
/// order) narrowed by CUDA_VISIBLE_DEVICES (indices only; anything else gives none).
/// Empty without GPUs or when a GPU's node is unknown.
std::vector<int> visible_gpu_nodes(const std::string& root, const char* cuda_visible_devices);

}  // namespace ddprun::agent
