// --numa_binding over fake sysfs trees: a 2-socket machine with 2 NUMA nodes per
// socket, 8 SMT cores per node, 2 core complexes per node and 8 GPUs; a 1-node
// machine without GPUs; uneven and impossible splits.
#include "agent/numa_binding.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "common/error.h"
#include "os/cpu_topology.h"

namespace ddprun::agent {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text << "\n";
}

// `sockets` x `nodes_per_socket` nodes of `cores` cores, `smt` threads each (Linux's
// numbering: first threads 0..N-1, their siblings N..2N-1), L3 shared by `ccx_cores`
// cores; `gpus_per_node` NVIDIA GPUs on every node.
std::string fake_machine(int sockets, int nodes_per_socket, int cores, int smt, int ccx_cores,
                         int gpus_per_node) {
  char tmpl[] = "/tmp/ddprun_sysfs_XXXXXX";
  fs::path root = mkdtemp(tmpl);
  int nodes = sockets * nodes_per_socket;
  int physical = nodes * cores;
  for (int node = 0; node < nodes; ++node) {
    std::string list;
    for (int t = 0; t < smt; ++t) {
      if (!list.empty()) list += ",";
      int first = t * physical + node * cores;
      list += std::to_string(first) + "-" + std::to_string(first + cores - 1);
    }
    write(root / "sys/devices/system/node" / ("node" + std::to_string(node)) / "cpulist", list);
  }
  for (int cpu = 0; cpu < physical * smt; ++cpu) {
    int core = cpu % physical;
    int node = core / cores;
    fs::path dir = root / "sys/devices/system/cpu" / ("cpu" + std::to_string(cpu));
    write(dir / "topology/physical_package_id", std::to_string(node / nodes_per_socket));
    write(dir / "topology/core_id", std::to_string(core % (cores * nodes_per_socket)));
    int ccx_first = core - core % ccx_cores;
    std::string shared;
    for (int t = 0; t < smt; ++t) {
      if (!shared.empty()) shared += ",";
      int first = t * physical + ccx_first;
      shared += std::to_string(first) + "-" + std::to_string(first + ccx_cores - 1);
    }
    write(dir / "cache/index3/level", "3");
    write(dir / "cache/index3/shared_cpu_list", shared);
    write(dir / "cache/index0/level", "1");
    write(dir / "cache/index0/shared_cpu_list", std::to_string(cpu));
  }
  int gpu = 0;
  for (int node = 0; node < nodes; ++node) {
    for (int g = 0; g < gpus_per_node; ++g, ++gpu) {
      char address[32];
      std::snprintf(address, sizeof(address), "0000:%02x:00.0", 0x10 + gpu);
      write(root / "proc/driver/nvidia/gpus" / address / "information", "Model: fake");
      write(root / "sys/bus/pci/devices" / address / "numa_node", std::to_string(node));
    }
  }
  return root.string();
}

std::string cpus(const CpuBinding& b) { return format_cpu_list(b.cpus); }

class BigMachine : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fake_machine(2, 2, 8, 2, 4, 2);
    topology_ = os::read_cpu_topology(root_, {});
    gpus_ = visible_gpu_nodes(root_, nullptr);
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string root_;
  os::CpuTopology topology_;
  std::vector<int> gpus_;
};

TEST_F(BigMachine, SysfsIsReadWithNodesCoresAndCoreComplexes) {
  ASSERT_EQ(topology_.cpus.size(), 64u);
  EXPECT_EQ(topology_.nodes, (std::vector<int>{0, 1, 2, 3}));
  const os::CpuInfo& c = topology_.cpus[45];  // the sibling of cpu 13
  EXPECT_EQ(c.node, 1);
  EXPECT_EQ(c.package, 0);
  EXPECT_EQ(c.core, 13);
  EXPECT_EQ(c.l3, 12);
  EXPECT_EQ(gpus_, (std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(visible_gpu_nodes(root_, "6,7,1"), (std::vector<int>{3, 3, 0}));
  EXPECT_EQ(visible_gpu_nodes(root_, "1,99,2"), (std::vector<int>{0})) << "ends at an invalid one";
  EXPECT_TRUE(visible_gpu_nodes(root_, "GPU-1234").empty()) << "names are not mapped";
}

TEST_F(BigMachine, NodeGivesEachWorkerItsGpusNode) {
  auto plan = plan_numa_binding(topology_, NumaMode::kNode, 8, gpus_);
  ASSERT_EQ(plan.size(), 8u);
  EXPECT_EQ(cpus(plan[0]), "0-7,32-39");
  EXPECT_EQ(cpus(plan[1]), "0-7,32-39");
  EXPECT_EQ(cpus(plan[7]), "24-31,56-63");
  EXPECT_EQ(plan[7].memory_node, 3);
  EXPECT_EQ(plan[2].describe(), "CPUs 8-15,40-47 (NUMA node 1, memory from node 1)");
}

TEST_F(BigMachine, SocketGivesTheWholeSocket) {
  auto plan = plan_numa_binding(topology_, NumaMode::kSocket, 8, gpus_);
  EXPECT_EQ(cpus(plan[0]), "0-15,32-47");
  EXPECT_EQ(cpus(plan[3]), "0-15,32-47");
  EXPECT_EQ(cpus(plan[4]), "16-31,48-63");
  EXPECT_EQ(plan[4].memory_node, -1) << "a socket spans nodes";
}

TEST_F(BigMachine, ExclusiveSplitsANodesPhysicalCoresWithTheirThreads) {
  auto plan = plan_numa_binding(topology_, NumaMode::kExclusive, 8, gpus_);
  EXPECT_EQ(cpus(plan[0]), "0-3,32-35");
  EXPECT_EQ(cpus(plan[1]), "4-7,36-39");
  EXPECT_EQ(cpus(plan[6]), "24-27,56-59");
  std::set<int> seen;
  for (const auto& b : plan) {
    for (int c : b.cpus) EXPECT_TRUE(seen.insert(c).second) << "cpu " << c << " given twice";
  }
  EXPECT_EQ(seen.size(), 64u);
}

TEST_F(BigMachine, CoreComplexGivesEachWorkerAnL3Group) {
  auto plan = plan_numa_binding(topology_, NumaMode::kCoreComplex, 8, gpus_);
  EXPECT_EQ(cpus(plan[0]), "0-3,32-35");
  EXPECT_EQ(cpus(plan[1]), "4-7,36-39");
  EXPECT_EQ(cpus(plan[5]), "20-23,52-55");
}

TEST_F(BigMachine, UnevenWorkersOnANodeAndImpossibleOnes) {
  // Three workers on node 0's 8 cores: 3, 3 and 2 cores.
  auto plan = plan_numa_binding(topology_, NumaMode::kExclusive, 3, {0, 0, 0});
  EXPECT_EQ(cpus(plan[0]), "0-2,32-34");
  EXPECT_EQ(cpus(plan[1]), "3-5,35-37");
  EXPECT_EQ(cpus(plan[2]), "6-7,38-39");
  try {
    plan_numa_binding(topology_, NumaMode::kExclusive, 9, {1});
    FAIL() << "9 workers on 8 cores";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "--numa_binding=exclusive: NUMA node 1 has 8 physical core(s) for 9 worker(s)");
  }
  EXPECT_THROW(plan_numa_binding(topology_, NumaMode::kCoreComplex, 3, {2}), Error)
      << "node 2 has 2 core complexes";
  // More workers than GPUs: they wrap around the GPUs.
  auto wrapped = plan_numa_binding(topology_, NumaMode::kNode, 3, {2});
  EXPECT_EQ(cpus(wrapped[2]), "16-23,48-55");
}

TEST(NumaBinding, WithoutGpusWorkersAreSpreadOverTheNodesInOrder) {
  std::string big = fake_machine(2, 2, 8, 2, 4, 0);
  auto t = os::read_cpu_topology(big, {});
  auto plan = plan_numa_binding(t, NumaMode::kNode, 8, {});
  EXPECT_EQ(plan[0].node, 0);
  EXPECT_EQ(plan[1].node, 0);
  EXPECT_EQ(plan[2].node, 1);
  EXPECT_EQ(plan[7].node, 3);
  auto exclusive = plan_numa_binding(t, NumaMode::kExclusive, 2, {});
  EXPECT_EQ(cpus(exclusive[0]), "0-7,32-39");
  EXPECT_EQ(cpus(exclusive[1]), "16-23,48-55");
  fs::remove_all(big);

  std::string small = fake_machine(1, 1, 4, 1, 4, 0);
  auto one = os::read_cpu_topology(small, {});
  EXPECT_EQ(cpus(plan_numa_binding(one, NumaMode::kNode, 2, {})[1]), "0-3");
  auto own = plan_numa_binding(one, NumaMode::kExclusive, 2, {});
  EXPECT_EQ(cpus(own[0]), "0-1");
  EXPECT_EQ(cpus(own[1]), "2-3");
  // Only the CPUs ddprun may use count (its affinity mask, a cgroup's cpuset).
  auto limited = os::read_cpu_topology(small, {1, 2});
  EXPECT_EQ(cpus(plan_numa_binding(limited, NumaMode::kExclusive, 2, {})[1]), "2");
  EXPECT_THROW(plan_numa_binding(limited, NumaMode::kExclusive, 3, {}), Error);
  fs::remove_all(small);
}

TEST(NumaBinding, ModesAndCpuListsParse) {
  EXPECT_EQ(parse_numa_mode("--numa_binding", "core-complex"), NumaMode::kCoreComplex);
  EXPECT_EQ(parse_numa_mode("--numa_binding", "off"), NumaMode::kOff);
  try {
    parse_numa_mode("PET_NUMA_BINDING", "nodes");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(),
                 "PET_NUMA_BINDING=nodes: expected node, socket, exclusive or core-complex");
  }
  EXPECT_EQ(os::parse_cpu_list("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_FALSE(os::parse_cpu_list("3-1"));
  EXPECT_FALSE(os::parse_cpu_list("a"));
  EXPECT_EQ(format_cpu_list({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
}

}  // namespace
}  // namespace ddprun::agent
