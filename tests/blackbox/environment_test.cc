// The environment every worker gets, compared with torchrun 1.13's (see
// TORCHRUN_REFERENCE.md) variable by variable.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "tests/blackbox/ddprun_process.h"

namespace ddprun::test {
namespace {

using Env = std::map<std::string, std::string>;

// Runs `env` in every worker with tee'd stdout and splits the lines by local rank.
std::map<int, Env> worker_envs(std::vector<std::string> flags,
                               const std::map<std::string, std::optional<std::string>>& env,
                               int nproc, Finished* finished = nullptr) {
  flags.insert(flags.end(), {"--tee=1", "--no_python", test_worker_binary(), "env"});
  Finished f = run_ddprun(flags, env);
  EXPECT_EQ(f.code, 0) << f.err;
  std::map<int, Env> envs;
  for (int lr = 0; lr < nproc; ++lr) {
    std::string prefix = "[default" + std::to_string(lr) + "]:";
    for (const auto& line : lines_starting_with(f.out, prefix)) {
      std::string kv = line.substr(prefix.size());
      size_t eq = kv.find('=');
      if (eq != std::string::npos) envs[lr][kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  }
  if (finished) *finished = f;
  return envs;
}

TEST(Environment, EveryRankGetsTorchrunsVariables) {
  Finished f;
  auto envs = worker_envs({"--nproc_per_node=3"}, {{"OMP_NUM_THREADS", std::nullopt}}, 3, &f);
  ASSERT_EQ(envs.size(), 3u);
  for (int lr = 0; lr < 3; ++lr) {
    Env& e = envs[lr];
    std::string r = std::to_string(lr);
    EXPECT_EQ(e["LOCAL_RANK"], r);
    EXPECT_EQ(e["RANK"], r);
    EXPECT_EQ(e["GROUP_RANK"], "0");
    EXPECT_EQ(e["ROLE_RANK"], r);
    EXPECT_EQ(e["ROLE_NAME"], "default");
    EXPECT_EQ(e["LOCAL_WORLD_SIZE"], "3");
    EXPECT_EQ(e["WORLD_SIZE"], "3");
    EXPECT_EQ(e["GROUP_WORLD_SIZE"], "1");
    EXPECT_EQ(e["ROLE_WORLD_SIZE"], "3");
    EXPECT_EQ(e["MASTER_ADDR"], "127.0.0.1");
    // The agent hosts the store on a port it bound itself.
    EXPECT_EQ(e["MASTER_PORT"], envs[0]["MASTER_PORT"]);
    EXPECT_GT(std::stoi(e["MASTER_PORT"]), 0);
    EXPECT_EQ(e["TORCHELASTIC_RESTART_COUNT"], "0");
    EXPECT_EQ(e["TORCHELASTIC_MAX_RESTARTS"], "0");
    EXPECT_EQ(e["TORCHELASTIC_RUN_ID"], "none");
    EXPECT_EQ(e["TORCHELASTIC_USE_AGENT_STORE"], "True");
    EXPECT_EQ(e.count("NCCL_ASYNC_ERROR_HANDLING"), 0u);  // torch 1.x's: the Python hook's
    EXPECT_EQ(e["TORCH_NCCL_ASYNC_ERROR_HANDLING"], "1");
    EXPECT_EQ(e["TORCHELASTIC_SIGNALS_TO_HANDLE"], "SIGTERM,SIGINT,SIGHUP,SIGQUIT");
    EXPECT_EQ(e["OMP_NUM_THREADS"], "1");
    std::string suffix = "/attempt_0/" + r + "/error.json";
    const std::string& ef = e["TORCHELASTIC_ERROR_FILE"];
    ASSERT_GE(ef.size(), suffix.size());
    EXPECT_EQ(ef.substr(ef.size() - suffix.size()), suffix);
  }
  EXPECT_NE(f.err.find("OMP_NUM_THREADS"), std::string::npos) << "the warning banner is missing";
}

TEST(Environment, InheritedValuesWinAndNoBannerWhenOmpIsSet) {
  Finished f;
  auto envs = worker_envs({"--nproc_per_node=2", "--role=trainer", "--max_restarts=4"},
                          {{"OMP_NUM_THREADS", "3"},
                           {"NCCL_ASYNC_ERROR_HANDLING", "0"},
                           {"DDPRUN_TEST_MARKER", "kept"}},
                          0, &f);
  // The role changes the tee prefix, so parse again with it.
  auto lines = lines_starting_with(f.out, "[trainer1]:");
  Env e;
  for (const auto& l : lines) {
    auto kv = l.substr(std::string("[trainer1]:").size());
    e[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
  }
  EXPECT_EQ(e["OMP_NUM_THREADS"], "3");
  EXPECT_EQ(e["NCCL_ASYNC_ERROR_HANDLING"], "0");
  EXPECT_EQ(e["DDPRUN_TEST_MARKER"], "kept");
  EXPECT_EQ(e["ROLE_NAME"], "trainer");
  EXPECT_EQ(e["TORCHELASTIC_MAX_RESTARTS"], "4");
  EXPECT_EQ(f.err.find("OMP_NUM_THREADS"), std::string::npos);
}

TEST(Environment, SingleWorkerGetsNoOmpOverride) {
  auto envs = worker_envs({}, {{"OMP_NUM_THREADS", std::nullopt}}, 1);
  EXPECT_EQ(envs[0].count("OMP_NUM_THREADS"), 0u);
  EXPECT_EQ(envs[0]["WORLD_SIZE"], "1");
}

TEST(Environment, StandaloneUsesAFreshRunIdAndAFreePort) {
  auto first = worker_envs({"--standalone", "--nproc_per_node=2"}, {}, 2);
  auto second = worker_envs({"--standalone"}, {}, 1);
  const std::string& id = first[0]["TORCHELASTIC_RUN_ID"];
  EXPECT_EQ(id.size(), 36u) << id;
  EXPECT_EQ(first[1]["TORCHELASTIC_RUN_ID"], id);
  EXPECT_NE(second[0]["TORCHELASTIC_RUN_ID"], id);
  EXPECT_EQ(first[0]["MASTER_ADDR"], "127.0.0.1");  // the store listens on loopback only
  EXPECT_EQ(first[0]["MASTER_PORT"], first[1]["MASTER_PORT"]);
  EXPECT_GT(std::stoi(first[0]["MASTER_PORT"]), 0);
}

TEST(Environment, PetVariablesAndBothSpellingsSetOptions) {
  auto envs = worker_envs({"--master-addr=10.1.2.3", "--rdzv-id=job7"},
                          {{"PET_NPROC_PER_NODE", "2"}, {"PET_MASTER_PORT", "29777"}}, 2);
  ASSERT_EQ(envs.size(), 2u);
  EXPECT_EQ(envs[1]["LOCAL_WORLD_SIZE"], "2");
  EXPECT_EQ(envs[1]["MASTER_PORT"], "29777") << "an explicit port is honoured";
  EXPECT_EQ(envs[1]["MASTER_ADDR"], "10.1.2.3");
  EXPECT_EQ(envs[1]["TORCHELASTIC_RUN_ID"], "job7");
}

TEST(Environment, CommandLineBeatsPetVariables) {
  auto envs = worker_envs({"--nproc_per_node", "1"}, {{"PET_NPROC_PER_NODE", "3"}}, 3);
  EXPECT_EQ(envs.size(), 1u);
}

TEST(Environment, LocalRankIsSubstitutedInArguments) {
  Finished f = run_ddprun({"--nproc_per_node=2", "--tee=1", "--no_python", test_worker_binary(),
                           "args", "--device=cuda:${local_rank}", "--nproc_per_node=9"});
  ASSERT_EQ(f.code, 0) << f.err;
  EXPECT_NE(f.out.find("[default0]:--device=cuda:0"), std::string::npos) << f.out;
  EXPECT_NE(f.out.find("[default1]:--device=cuda:1"), std::string::npos) << f.out;
  // Flags after the script belong to the script.
  EXPECT_NE(f.out.find("[default1]:--nproc_per_node=9"), std::string::npos) << f.out;
}

TEST(Environment, PythonScriptsRunUnbufferedThroughPythonExec) {
  std::string dir = make_temp_dir();
  std::string script = dir + "/show.py";
  {
    std::ofstream(script)
        << "import sys\nprint('unbuffered', '-u' in sys.orig_argv, sys.argv[1:])\n";
  }
  Finished f = run_ddprun({script, "a", "b"}, {{"PYTHON_EXEC", "/usr/bin/python3"}});
  ASSERT_EQ(f.code, 0) << f.err;
  EXPECT_EQ(f.out, "unbuffered True ['a', 'b']\n");
  Finished m = run_ddprun({"-m", "json.tool", "--help"}, {{"PYTHON_EXEC", "/usr/bin/python3"}});
  EXPECT_EQ(m.code, 0) << m.err;
  EXPECT_NE(m.out.find("usage"), std::string::npos);
}

}  // namespace
}  // namespace ddprun::test
