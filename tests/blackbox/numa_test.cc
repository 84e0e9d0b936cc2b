// --numa_binding on this machine: each worker's Cpus_allowed_list, read by the worker
// itself, is the binding ddprun planned for its local rank (the plans themselves are
// tested over fake machines in tests/unit/numa_binding_test.cc).
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <sstream>
#include <string>

#include "agent/numa_binding.h"
#include "os/cpu_topology.h"
#include "tests/blackbox/ddprun_process.h"

namespace ddprun::test {
namespace {

// local rank -> the CPU list its worker printed ("[default<r>]:cpus=<list>").
std::map<int, std::string> printed_cpus(const std::string& out) {
  std::map<int, std::string> cpus;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    size_t at = line.find("]:cpus=");
    if (line.rfind("[default", 0) != 0 || at == std::string::npos) continue;
    cpus[std::stoi(line.substr(8, at - 8))] = line.substr(at + 7);
  }
  return cpus;
}

TEST(NumaBinding, EachWorkerRunsOnTheCpusPlannedForIt) {
  os::CpuTopology topology = os::read_cpu_topology("/", os::allowed_cpus());
  std::vector<int> gpus = agent::visible_gpu_nodes("/", std::getenv("CUDA_VISIBLE_DEVICES"));
  for (const char* mode : {"node", "exclusive"}) {
    auto plan = agent::plan_numa_binding(topology, agent::parse_numa_mode("", mode), 2, gpus);
    Finished f = run_ddprun({std::string("--numa_binding=") + mode, "--nproc_per_node=2",
                             "--tee=3", "--no_tracking", "--no_python", "/bin/sh", "-c",
                             "echo cpus=$(grep Cpus_allowed_list /proc/self/status | cut -f2)"});
    ASSERT_EQ(f.code, 0) << mode << ": " << f.err;
    auto cpus = printed_cpus(f.out);
    ASSERT_EQ(cpus.size(), 2u) << f.out;
    for (int r : {0, 1}) {
      EXPECT_EQ(cpus[r], agent::format_cpu_list(plan[static_cast<size_t>(r)].cpus))
          << mode << ", local rank " << r;
    }
  }
}

TEST(NumaBinding, AnImpossibleBindingIsAnErrorBeforeAnyWorkerStarts) {
  os::CpuTopology topology = os::read_cpu_topology("/", os::allowed_cpus());
  std::string workers = std::to_string(topology.cpus.size() + 1);
  Finished f = run_ddprun({"--numa_binding=exclusive", "--nproc_per_node=" + workers,
                           "--no_tracking", "--no_python", "/bin/sh", "-c", "echo started"});
  EXPECT_EQ(f.code, 1);
  EXPECT_NE(f.err.find("ddprun: error: --numa_binding=exclusive: NUMA node"), std::string::npos)
      << f.err;
  EXPECT_NE(f.err.find("for " + workers + " worker(s)"), std::string::npos) << f.err;
  EXPECT_EQ(f.out.find("started"), std::string::npos);
  Finished bad = run_ddprun({"--numa-binding", "nodes", "--no_python", "/bin/true"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--numa_binding=nodes: expected node, socket, exclusive or core-complex"),
            std::string::npos)
      << bad.err;
}

}  // namespace
}  // namespace ddprun::test
