#include "agent/worker_env.h"

#include <gtest/gtest.h>

#include <map>

namespace ddprun::agent {
namespace {

std::map<std::string, std::string> as_map(const std::vector<std::string>& env) {
  std::map<std::string, std::string> m;
  for (const auto& e : env) {
    auto eq = e.find('=');
    EXPECT_TRUE(m.emplace(e.substr(0, eq), e.substr(eq + 1)).second) << "duplicate " << e;
  }
  return m;
}

struct Fixture {
  AgentConfig config;
  WorkerGroup group;
  Worker worker;
  Fixture() {
    config.spec.local_world_size = 4;
    config.spec.max_restarts = 3;
    config.run_id = "abc";
    group.group_rank = 1;
    group.group_world_size = 2;
    group.master_addr = "node0";
    group.master_port = 1234;
    group.restart_count = 2;
    worker.local_rank = 3;
    worker.global_rank = 7;
    worker.role_rank = 7;
    worker.world_size = 8;
    worker.role_world_size = 8;
    worker.error_file = "/logs/attempt_2/3/error.json";
  }
};

TEST(WorkerEnv, TorchrunVariables) {
  Fixture f;
  auto env = as_map(build_worker_env({"PATH=/bin", "RANK=99"}, f.config, f.group, f.worker));
  EXPECT_EQ(env["PATH"], "/bin");
  EXPECT_EQ(env["RANK"], "7");
  EXPECT_EQ(env["LOCAL_RANK"], "3");
  EXPECT_EQ(env["GROUP_RANK"], "1");
  EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "4");
  EXPECT_EQ(env["WORLD_SIZE"], "8");
  EXPECT_EQ(env["GROUP_WORLD_SIZE"], "2");
  EXPECT_EQ(env["MASTER_ADDR"], "node0");
  EXPECT_EQ(env["MASTER_PORT"], "1234");
  EXPECT_EQ(env["TORCHELASTIC_RESTART_COUNT"], "2");
  EXPECT_EQ(env["TORCHELASTIC_MAX_RESTARTS"], "3");
  EXPECT_EQ(env["TORCHELASTIC_RUN_ID"], "abc");
  EXPECT_EQ(env["TORCHELASTIC_USE_AGENT_STORE"], "False");
  EXPECT_EQ(env["TORCHELASTIC_ERROR_FILE"], "/logs/attempt_2/3/error.json");
  // torchrun 2.x's names and values; the old NCCL name is the Python hook's, for 1.x.
  EXPECT_EQ(env["TORCH_NCCL_ASYNC_ERROR_HANDLING"], "1");
  EXPECT_EQ(env.count("NCCL_ASYNC_ERROR_HANDLING"), 0u);
  EXPECT_EQ(env["TORCHELASTIC_SIGNALS_TO_HANDLE"], "SIGTERM,SIGINT,SIGHUP,SIGQUIT");
  EXPECT_EQ(env.count("OMP_NUM_THREADS"), 0u);
  EXPECT_EQ(env.count("CUDA_VISIBLE_DEVICES"), 0u);
}

TEST(WorkerEnv, VirtualLocalRankGivesEachWorkerItsOwnDeviceAsDeviceZero) {
  Fixture f;
  f.config.spec.virtual_local_rank = true;
  f.config.spec.virtual_devices = {"4", "6", "7", "5"};
  auto env =
      as_map(build_worker_env({"CUDA_VISIBLE_DEVICES=4,6,7,5"}, f.config, f.group, f.worker));
  EXPECT_EQ(env["LOCAL_RANK"], "0");
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], std::to_string(5));  // local rank 3's entry
  EXPECT_EQ(env["RANK"], std::to_string(f.worker.global_rank));
}

TEST(WorkerEnv, OmpOnlyWhenUnset) {
  Fixture f;
  f.config.omp_num_threads = std::to_string(1);
  EXPECT_EQ(as_map(build_worker_env({}, f.config, f.group, f.worker))["OMP_NUM_THREADS"], "1");
  auto env = as_map(build_worker_env({"OMP_NUM_THREADS=6"}, f.config, f.group, f.worker));
  EXPECT_EQ(env["OMP_NUM_THREADS"], "6");
}

TEST(WorkerEnv, AgentStoreFlagIsPythonBoolText) {
  Fixture f;
  f.group.use_agent_store = true;
  auto env = as_map(build_worker_env({}, f.config, f.group, f.worker));
  EXPECT_EQ(env["TORCHELASTIC_USE_AGENT_STORE"], "True");
}

TEST(WorkerArgv, LocalRankSubstitution) {
  WorkerSpec spec;
  spec.argv = {"prog", "--gpu=${local_rank}", "${local_rank}${local_rank}", "plain"};
  EXPECT_EQ(build_worker_argv(spec, 5),
            (std::vector<std::string>{"prog", "--gpu=5", "55", "plain"}));
}

}  // namespace
}  // namespace ddprun::agent
