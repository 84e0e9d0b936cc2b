#include "agent/numa_binding.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "common/error.h"
#include "common/number_ranges.h"

namespace ddprun::agent {
namespace {

using os::CpuInfo;
using os::CpuTopology;

std::vector<int> cpus_where(const CpuTopology& t, const std::function<bool(const CpuInfo&)>& keep) {
  std::vector<int> out;
  for (const auto& c : t.cpus) {
    if (keep(c)) out.push_back(c.id);
  }
  return out;
}

// A node's CPUs grouped by `key` (physical core, or L3 group), groups ordered by their
// lowest CPU.
template <typename Key>
std::vector<std::vector<int>> groups_of(const CpuTopology& t, int node, Key key) {
  std::map<decltype(key(t.cpus.front())), std::vector<int>> by_key;
  for (const auto& c : t.cpus) {
    if (c.node == node) by_key[key(c)].push_back(c.id);
  }
  std::vector<std::vector<int>> out;
  for (auto& [k, cpus] : by_key) out.push_back(std::move(cpus));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.front() < b.front(); });
  return out;
}

}  // namespace

NumaMode parse_numa_mode(const std::string& source, const std::string& text) {
  if (text == "off" || text.empty()) return NumaMode::kOff;
  if (text == "node") return NumaMode::kNode;
  if (text == "socket") return NumaMode::kSocket;
  if (text == "exclusive") return NumaMode::kExclusive;
  if (text == "core-complex" || text == "core_complex") return NumaMode::kCoreComplex;
  throw UsageError(source + "=" + text + ": expected node, socket, exclusive or core-complex");
}

const char* numa_mode_name(NumaMode mode) {
  switch (mode) {
    case NumaMode::kNode:
      return "node";
    case NumaMode::kSocket:
      return "socket";
    case NumaMode::kExclusive:
      return "exclusive";
    case NumaMode::kCoreComplex:
      return "core-complex";
    case NumaMode::kOff:
      break;
  }
  return "off";
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  return number_ranges(cpus, /*pairs_as_ranges=*/true);
}

std::string CpuBinding::describe() const {
  std::string out = "CPUs " + format_cpu_list(cpus);
  out += " (NUMA node " + std::to_string(node);
  if (memory_node >= 0) out += ", memory from node " + std::to_string(memory_node);
  out += ")";
  return out;
}

std::vector<CpuBinding> plan_numa_binding(const CpuTopology& t, NumaMode mode, int workers,
                                          const std::vector<int>& gpu_nodes) {
  std::vector<CpuBinding> plan(static_cast<size_t>(std::max(0, workers)));
  if (mode == NumaMode::kOff || workers <= 0 || t.cpus.empty()) return {};
  // Each worker's node: its GPU's, or an even share of the nodes in order.
  std::map<int, std::vector<int>> on_node;  // node -> its workers, in local rank order
  for (int i = 0; i < workers; ++i) {
    int node = 0;
    if (!gpu_nodes.empty()) {
      node = gpu_nodes[static_cast<size_t>(i) % gpu_nodes.size()];
    } else {
      size_t n = t.nodes.size();
      node = t.nodes[static_cast<size_t>(i) * n / static_cast<size_t>(workers)];
    }
    plan[static_cast<size_t>(i)].node = node;
    on_node[node].push_back(i);
  }
  for (const auto& [node, ranks] : on_node) {
    std::vector<int> node_cpus = cpus_where(t, [node = node](const CpuInfo& c) { return c.node == node; });
    if (node_cpus.empty()) {
      throw Error("--numa_binding=" + std::string(numa_mode_name(mode)) + ": NUMA node " +
                  std::to_string(node) + " has none of the CPUs ddprun may use");
    }
    if (mode == NumaMode::kNode || mode == NumaMode::kSocket) {
      std::vector<int> cpus = node_cpus;
      if (mode == NumaMode::kSocket) {
        std::set<int> packages;
        for (const auto& c : t.cpus) {
          if (c.node == node) packages.insert(c.package);
        }
        cpus = cpus_where(t, [&](const CpuInfo& c) { return packages.count(c.package) > 0; });
      }
      for (int r : ranks) {
        plan[static_cast<size_t>(r)].cpus = cpus;
        plan[static_cast<size_t>(r)].memory_node = mode == NumaMode::kNode ? node : -1;
      }
      continue;
    }
    bool exclusive = mode == NumaMode::kExclusive;
    auto groups = exclusive
                      ? groups_of(t, node, [](const CpuInfo& c) { return std::make_pair(c.package, c.core); })
                      : groups_of(t, node, [](const CpuInfo& c) { return c.l3 < 0 ? c.node : c.l3; });
    size_t k = ranks.size();
    if (groups.size() < k) {
      throw Error("--numa_binding=" + std::string(numa_mode_name(mode)) + ": NUMA node " +
                  std::to_string(node) + " has " + std::to_string(groups.size()) +
                  (exclusive ? " physical core(s)" : " core complex(es) (L3 groups)") +
                  " for " + std::to_string(k) + " worker(s)");
    }
    // Core complexes: one each. Cores: an even share each, the first ranks one more.
    size_t base = exclusive ? groups.size() / k : 1;
    size_t extra = exclusive ? groups.size() % k : 0;
    size_t next = 0;
    for (size_t j = 0; j < k; ++j) {
      CpuBinding& b = plan[static_cast<size_t>(ranks[j])];
      for (size_t g = 0; g < base + (j < extra ? 1 : 0); ++g, ++next) {
        b.cpus.insert(b.cpus.end(), groups[next].begin(), groups[next].end());
      }
      std::sort(b.cpus.begin(), b.cpus.end());
      b.memory_node = node;
    }
  }
  return plan;
}

std::vector<int> visible_gpu_nodes(const std::string& root, const char* cuda_visible_devices) {
  std::vector<std::string> gpus = os::nvidia_gpu_addresses(root);
  std::vector<size_t> order;
  if (cuda_visible_devices == nullptr) {
    for (size_t i = 0; i < gpus.size(); ++i) order.push_back(i);
  } else {
    std::stringstream list(cuda_visible_devices);
    for (std::string entry; std::getline(list, entry, ',');) {
      char* end = nullptr;
      long idx = std::strtol(entry.c_str(), &end, 10);
      // As CUDA: the list ends at the first entry that is not a valid index.
      if (entry.empty() || *end != '\0' || idx < 0 || static_cast<size_t>(idx) >= gpus.size()) {
        if (!entry.empty() && *end != '\0') return {};  // GPU-/MIG- names: not mapped here
        break;
      }
      order.push_back(static_cast<size_t>(idx));
    }
  }
  std::vector<int> nodes;
  for (size_t i : order) {
    auto node = os::pci_numa_node(root, gpus[i]);
    if (!node) return {};
    nodes.push_back(*node);
  }
  return nodes;
}

}  // namespace ddprun::agent
