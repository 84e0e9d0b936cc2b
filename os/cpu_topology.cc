#include "os/cpu_topology.h"

#include <sched.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

namespace ddprun::os {
namespace {

namespace fs = std::filesystem;

std::string read_line(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

std::optional<int> read_int(const fs::path& path) {
  std::string text = read_line(path);
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (*end != '\0') return std::nullopt;
  return static_cast<int>(v);
}

// "cpu12" -> 12, "node3" -> 3; nullopt for other names.
std::optional<int> numbered(const std::string& name, std::string_view prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) {
    return std::nullopt;
  }
  int v = 0;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return std::nullopt;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

}  // namespace

std::optional<std::vector<int>> parse_cpu_list(std::string_view text) {
  std::vector<int> out;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view part = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    size_t dash = part.find('-');
    auto number = [](std::string_view s) -> std::optional<int> {
      if (s.empty() || s.size() > 6) return std::nullopt;
      int v = 0;
      for (char c : s) {
        if (c < '0' || c > '9') return std::nullopt;
        v = v * 10 + (c - '0');
      }
      return v;
    };
    auto first = number(part.substr(0, dash));
    auto last = dash == std::string_view::npos ? first : number(part.substr(dash + 1));
    if (!first || !last || *last < *first) return std::nullopt;
    for (int c = *first; c <= *last; ++c) out.push_back(c);
  }
  return out;
}

CpuTopology read_cpu_topology(const std::string& root, const std::set<int>& allowed) {
  fs::path system = fs::path(root) / "sys/devices/system";
  std::map<int, int> node_of;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(system / "node", ec)) {
    auto node = numbered(e.path().filename().string(), "node");
    if (!node) continue;
    for (int cpu : parse_cpu_list(read_line(e.path() / "cpulist")).value_or(std::vector<int>{})) {
      node_of[cpu] = *node;
    }
  }
  CpuTopology t;
  std::set<int> nodes;
  for (const auto& e : fs::directory_iterator(system / "cpu", ec)) {
    auto id = numbered(e.path().filename().string(), "cpu");
    if (!id || (!allowed.empty() && !allowed.count(*id))) continue;
    if (read_int(e.path() / "online").value_or(1) == 0) continue;
    CpuInfo c;
    c.id = *id;
    c.package = read_int(e.path() / "topology/physical_package_id").value_or(0);
    c.core = read_int(e.path() / "topology/core_id").value_or(*id);
    c.node = node_of.count(*id) ? node_of[*id] : 0;
    std::error_code cache_ec;
    for (const auto& cache : fs::directory_iterator(e.path() / "cache", cache_ec)) {
      if (read_int(cache.path() / "level") != 3) continue;
      auto shared = parse_cpu_list(read_line(cache.path() / "shared_cpu_list"));
      if (shared && !shared->empty()) c.l3 = *std::min_element(shared->begin(), shared->end());
    }
    nodes.insert(c.node);
    t.cpus.push_back(c);
  }
  std::sort(t.cpus.begin(), t.cpus.end(),
            [](const CpuInfo& a, const CpuInfo& b) { return a.id < b.id; });
  t.nodes.assign(nodes.begin(), nodes.end());
  return t;
}

std::set<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::set<int> out;
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) out.insert(c);
  }
  return out;
}

std::vector<std::string> nvidia_gpu_addresses(const std::string& root) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(root) / "proc/driver/nvidia/gpus", ec)) {
    out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<int> pci_numa_node(const std::string& root, const std::string& address) {
  auto node = read_int(fs::path(root) / "sys/bus/pci/devices" / address / "numa_node");
  if (!node || *node < 0) return std::nullopt;
  return node;
}

}  // namespace ddprun::os
