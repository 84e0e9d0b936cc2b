#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace ddprun::os {

/// One CPU (hardware thread) as sysfs describes it.
struct CpuInfo {
  int id = 0;
  int package = 0;  // socket
  int core = 0;     // core id within its package: hardware threads of a core share it
  int node = 0;     // NUMA node
  int l3 = -1;      // its L3-sharing group: the lowest CPU id sharing its L3 (-1: unknown)
};

/// The CPUs this process may use, with their sockets, cores, NUMA nodes and L3 groups.
struct CpuTopology {
  std::vector<CpuInfo> cpus;  // by id
  std::vector<int> nodes;     // NUMA nodes that hold at least one of these CPUs, ascending
};

/// "0-3,8,10-11" -> {0,1,2,3,8,10,11}; nullopt for anything else (empty is empty).
std::optional<std::vector<int>> parse_cpu_list(std::string_view text);

/// Reads `<root>/sys/devices/system/{cpu,node}` ("/" for this machine; tests give a
/// fake tree), keeping the CPUs in `allowed` (empty: every CPU listed). A kernel
/// without NUMA puts every CPU on node 0. Never throws; unreadable parts read as 0.
CpuTopology read_cpu_topology(const std::string& root, const std::set<int>& allowed);

/// The CPUs this process may run on (its affinity mask).
std::set<int> allowed_cpus();

/// The NVIDIA GPUs' PCI addresses in the driver's order (`<root>/proc/driver/nvidia/gpus/`,
/// which is PCI bus order, CUDA's order with CUDA_DEVICE_ORDER=PCI_BUS_ID). Empty
/// without the driver.
std::vector<std::string> nvidia_gpu_addresses(const std::string& root);

/// A PCI device's NUMA node (`<root>/sys/bus/pci/devices/<address>/numa_node`);
/// nullopt when unknown (-1, missing).
std::optional<int> pci_numa_node(const std::string& root, const std::string& address);

}  // namespace ddprun::os
