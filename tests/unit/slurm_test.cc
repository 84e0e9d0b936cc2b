// Slurm's environment turned into rendezvous flags (launcher/slurm_*.h), through the
// command-line parser as ddprun runs it, with the node address lookup faked.
#include <gtest/gtest.h>

#include <map>

#include "common/error.h"
#include "launcher/cli.h"
#include "launcher/node_address.h"
#include "launcher/slurm_step.h"

namespace ddprun::launcher {
namespace {

using Env = std::map<std::string, std::string>;

// What srun -N2 --ntasks-per-node=1 sets on the second node of job 42, step 3, in a
// batch script that exported a job token (as the README shows).
Env step_env() {
  return {{"DDPRUN_JOB_TOKEN", "the job's"},
          {"SLURM_JOB_ID", "42"},
          {"SLURM_STEP_ID", "3"},
          {"SLURM_STEP_NUM_NODES", "2"},
          {"SLURM_NODEID", "1"},
          {"SLURM_STEP_NODELIST", "n[1-2]"},
          {"SLURM_JOB_NODELIST", "n[1-2]"},
          {"SLURM_STEP_NUM_TASKS", "2"},
          {"SLURMD_NODENAME", "n2"},
          {"SLURM_NNODES", "2"},
          {"SLURM_JOB_NUM_NODES", "2"}};
}

struct Slurm {
  explicit Slurm(Env e = step_env()) : env(std::move(e)) {}
  Env env;
  std::map<std::string, NodeAddress> unresolvable;  // names DNS does not know
  std::vector<std::string> looked_up;

  LaunchConfig parse(std::vector<std::string> args) {
    args.insert(args.begin(), "ddprun");
    args.emplace_back("train.py");
    std::vector<const char*> argv;
    for (auto& a : args) argv.push_back(a.c_str());
    EnvLookup lookup = [this](const std::string& k) -> std::optional<std::string> {
      auto it = env.find(k);
      return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
    NodeAddressLookup address = [this](const std::string& name) -> std::optional<NodeAddress> {
      looked_up.push_back(name);
      auto it = unresolvable.find(name);
      if (it == unresolvable.end()) return std::nullopt;
      return it->second;
    };
    return parse_command_line(static_cast<int>(argv.size()), argv.data(), lookup,
                              DeviceCounter{[] { return 4; }, [] { return 0; }, [] { return 0; }},
                              address);
  }

  std::optional<SlurmStep> step() {
    return read_slurm_step([this](const std::string& k) -> std::optional<std::string> {
      auto it = env.find(k);
      return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
    });
  }
};

std::string error_of(Slurm& s, std::vector<std::string> args) {
  try {
    s.parse(std::move(args));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(SlurmStep, ReadsTheStepFromTheEnvironment) {
  Slurm s;
  auto step = s.step();
  ASSERT_TRUE(step);
  EXPECT_EQ(step->job_id, "42");
  EXPECT_EQ(step->step_id, 3);
  EXPECT_EQ(step->nodes, 2);
  EXPECT_EQ(step->node_id, 1);
  EXPECT_EQ(step->node_names, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(step->node_name, "n2");
  EXPECT_FALSE(Slurm{Env{}}.step()) << "outside Slurm";
}

TEST(SlurmStep, PortComesFromTheJobAndForStaticJobsTheStep) {
  SlurmStep a;
  a.job_id = "42";
  a.step_id = 3;
  EXPECT_EQ(slurm_port(a, false), 20000 + (42 * 8 + 3));
  EXPECT_EQ(slurm_port(a, true), 20000 + 42 * 8);
  SlurmStep b = a;
  b.step_id = 4;
  EXPECT_NE(slurm_port(a, false), slurm_port(b, false)) << "concurrent steps of one job";
  EXPECT_EQ(slurm_port(a, true), slurm_port(b, true)) << "elastic steps of one job meet";
  SlurmStep big;
  big.job_id = "2147483000";
  big.step_id = 7;
  EXPECT_GE(slurm_port(big, false), 20000);
  EXPECT_LT(slurm_port(big, false), 32000);
}

TEST(SlurmFlags, StaticJobGetsEveryRendezvousValueFromTheStep) {
  Slurm s;
  auto c = s.parse({"--nproc_per_node=2"});
  EXPECT_EQ(c.rendezvous.backend, rendezvous::Backend::kStatic);
  EXPECT_EQ(c.rendezvous.min_nodes, 2);
  EXPECT_EQ(c.rendezvous.max_nodes, 2);
  EXPECT_EQ(c.rendezvous.node_rank, 1);
  EXPECT_EQ(c.rendezvous.master_addr, "n1") << "the first node, by the name that resolves";
  EXPECT_EQ(c.rendezvous.master_port, 20000 + 42 * 8 + 3);
  EXPECT_EQ(c.agent.run_id, "42.3");
  EXPECT_EQ(c.agent.spec.local_world_size, 2) << "--nproc_per_node keeps its meaning";
  EXPECT_TRUE(c.notices.empty());
  EXPECT_EQ(s.looked_up, (std::vector<std::string>{"n1"}));
}

// Without a token the step's nodes agree on one through MUNGE at launch
// (launcher/slurm_token.h, tested in token_handout_test.cc): nothing to warn of yet.
TEST(SlurmFlags, AStepWithoutATokenGetsOneThroughMunge) {
  Slurm s;
  s.env.erase("DDPRUN_JOB_TOKEN");
  auto c = s.parse({});
  EXPECT_TRUE(c.notices.empty()) << c.notices[0];
  EXPECT_TRUE(c.rendezvous.token_by_munge);
  EXPECT_TRUE(c.rendezvous.token.empty());
  // So does an elastic step meeting at the first node.
  auto elastic = s.parse({"--rdzv_backend=c10d", "--nnodes=1:2"});
  EXPECT_TRUE(elastic.rendezvous.token_by_munge);
  // A given token is the job's; a single node needs none.
  EXPECT_FALSE(Slurm().parse({}).rendezvous.token_by_munge);
  EXPECT_FALSE(s.parse({"--nnodes=1"}).rendezvous.token_by_munge);
}

TEST(SlurmFlags, UnresolvableFirstNodeUsesTheAddressFoundAndSaysSo) {
  Slurm s;
  s.unresolvable["n1"] = {"10.1.2.3", "scontrol's NodeAddr"};
  auto c = s.parse({});
  EXPECT_EQ(c.rendezvous.master_addr, "10.1.2.3");
  ASSERT_EQ(c.notices.size(), 1u);
  EXPECT_EQ(c.notices[0],
            "Slurm node n1 does not resolve; using its address 10.1.2.3 (scontrol's NodeAddr)");
}

TEST(SlurmFlags, ExplicitFlagsAndPetVariablesWin) {
  Slurm s;
  auto c = s.parse({"--master_addr=head", "--master_port=1234", "--rdzv_id=mine"});
  EXPECT_EQ(c.rendezvous.master_addr, "head");
  EXPECT_EQ(c.rendezvous.master_port, 1234);
  EXPECT_EQ(c.agent.run_id, "mine");
  EXPECT_TRUE(s.looked_up.empty()) << "no lookup for a given address";
  EXPECT_TRUE(c.notices.empty()) << "a chosen address or port is no conflict";

  Slurm pet;
  pet.env["PET_MASTER_PORT"] = "4321";
  EXPECT_EQ(pet.parse({}).rendezvous.master_port, 4321);
}

TEST(SlurmFlags, ContradictingValuesWinWithOneLineEach) {
  Slurm s;
  auto c = s.parse({"--nnodes=3", "--node_rank=2"});
  EXPECT_EQ(c.rendezvous.max_nodes, 3);
  EXPECT_EQ(c.rendezvous.node_rank, 2);
  ASSERT_EQ(c.notices.size(), 2u);
  EXPECT_EQ(c.notices[0],
            "--nnodes=3 does not match the 2 node(s) of this Slurm step (SLURM_STEP_NUM_NODES); "
            "using --nnodes=3");
  EXPECT_EQ(c.notices[1],
            "--node_rank=2 differs from this node's SLURM_NODEID=1; using "
            "--node_rank=2");
  Slurm pet;
  pet.env["PET_NNODES"] = "3";
  pet.env["PET_NODE_RANK"] = "0";
  auto p = pet.parse({});
  EXPECT_EQ(p.rendezvous.node_rank, 0);
  ASSERT_EQ(p.notices.size(), 2u);
  EXPECT_EQ(p.notices[0].rfind("PET_NNODES=3 does not match", 0), 0u) << p.notices[0];
}

TEST(SlurmFlags, ElasticC10dMeetsAtTheFirstNodeWhichHostsTheStore) {
  Slurm s;
  auto c = s.parse({"--rdzv_backend=c10d", "--nnodes=1:4"});
  EXPECT_TRUE(c.rendezvous.elastic());
  EXPECT_EQ(c.rendezvous.c10d_host, "n1");
  EXPECT_EQ(c.rendezvous.c10d_port, 20000 + 42 * 8);
  EXPECT_EQ(c.agent.run_id, "42") << "every step of the job joins one rendezvous";
  EXPECT_EQ(c.rendezvous.c10d_is_host, false);
  EXPECT_TRUE(c.notices.empty());

  Slurm first;
  first.env["SLURM_NODEID"] = "0";
  EXPECT_EQ(first.parse({"--rdzv_backend=c10d", "--nnodes=1:4"}).rendezvous.c10d_is_host, true);
  EXPECT_EQ(first.parse({"--rdzv_backend=c10d", "--rdzv_conf=is_host=0"}).rendezvous.c10d_is_host,
            false)
      << "rdzv_conf wins";
  auto fixed = first.parse({"--rdzv_backend=c10d"});
  EXPECT_EQ(fixed.rendezvous.max_nodes, 2) << "c10d without --nnodes: the step's nodes";

  Slurm given;
  auto g = given.parse({"--rdzv_backend=c10d", "--rdzv_endpoint=head:5000"});
  EXPECT_EQ(g.rendezvous.c10d_host, "head");
  EXPECT_FALSE(g.rendezvous.c10d_is_host);
}

TEST(SlurmFlags, OneNodeStepNeedsNoAddressButKeepsTheJobId) {
  Slurm s;
  s.env["SLURM_STEP_NUM_NODES"] = "1";
  s.env["SLURM_STEP_NODELIST"] = "n2";
  s.env["SLURM_NODEID"] = "0";
  s.env["SLURM_STEP_NUM_TASKS"] = "1";
  auto c = s.parse({});  // a one-node step inside a two-node allocation
  EXPECT_EQ(c.rendezvous.max_nodes, 1);
  EXPECT_EQ(c.rendezvous.master_port, 0) << "one node: a free port, as without Slurm";
  EXPECT_EQ(c.agent.run_id, "42.3");
  EXPECT_TRUE(s.looked_up.empty());
}

TEST(SlurmFlags, MoreThanOneTaskPerNodeIsRefused) {
  Slurm s;
  s.env["SLURM_STEP_NUM_TASKS"] = "4";
  std::string why = error_of(s, {});
  EXPECT_NE(why.find("runs 4 tasks on 2 node(s) (SLURM_STEP_NUM_TASKS=4)"), std::string::npos)
      << why;
  EXPECT_NE(why.find("srun --ntasks-per-node=1 ddprun"), std::string::npos) << why;
}

TEST(SlurmFlags, BatchScriptOfSeveralNodesIsRefusedUnlessOneNodeIsAskedFor) {
  Env batch = {{"SLURM_JOB_ID", "7"},
               {"SLURM_NNODES", "2"},
               {"SLURM_JOB_NUM_NODES", "2"},
               {"SLURM_JOB_NODELIST", "n[1-2]"},
               {"SLURM_NODEID", "0"}};
  Slurm s{batch};
  std::string why = error_of(s, {});
  EXPECT_NE(why.find("outside a job step of a 2-node Slurm allocation (SLURM_JOB_NUM_NODES=2)"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("srun --ntasks-per-node=1 ddprun"), std::string::npos) << why;
  auto one = s.parse({"--nnodes=1"});
  EXPECT_EQ(one.rendezvous.max_nodes, 1);
  EXPECT_EQ(one.agent.run_id, "7");

  Slurm single{Env{{"SLURM_JOB_ID", "8"}, {"SLURM_NNODES", "1"}, {"SLURM_JOB_NODELIST", "n1"}}};
  auto c = single.parse({});
  EXPECT_EQ(c.rendezvous.max_nodes, 1);
  EXPECT_EQ(c.agent.run_id, "8");
}

TEST(SlurmFlags, OffIgnoresSlurmAndStandaloneRunsAlone) {
  Slurm s;
  auto off = s.parse({"--slurm=off"});
  EXPECT_EQ(off.rendezvous.max_nodes, 1);
  EXPECT_EQ(off.agent.run_id, "none");
  s.env["PET_SLURM"] = "off";
  EXPECT_EQ(s.parse({}).rendezvous.max_nodes, 1);
  EXPECT_EQ(error_of(s, {"--slurm=on"}), "--slurm=on: expected auto or off");

  Slurm alone;
  auto c = alone.parse({"--standalone"});
  EXPECT_EQ(c.rendezvous.max_nodes, 1);
  ASSERT_EQ(c.notices.size(), 1u);
  EXPECT_EQ(c.notices[0], "--standalone in a 2-node Slurm step: each node runs a job of its own");
}

TEST(SlurmFlags, MalformedEnvironmentNamesTheVariable) {
  struct Case {
    const char* var;
    const char* value;
    const char* message;
  };
  for (const Case& c :
       {Case{"SLURM_NODEID", "x", "SLURM_NODEID=x: expected a non-negative integer"},
        Case{"SLURM_NODEID", "2", "SLURM_NODEID=2 is not below SLURM_STEP_NUM_NODES=2"},
        Case{"SLURM_STEP_NUM_NODES", "-1", "SLURM_STEP_NUM_NODES=-1: expected"},
        Case{"SLURM_STEP_NODELIST", "n[1-3]",
             "SLURM_STEP_NODELIST=n[1-3] names 3 nodes but SLURM_STEP_NUM_NODES=2"},
        Case{"SLURM_STEP_NODELIST", "n[1-", "SLURM_STEP_NODELIST=n[1-: '[' at position 2"},
        Case{"SLURM_JOB_ID", "abc", "SLURM_JOB_ID=abc: expected a non-negative integer"}}) {
    Slurm s;
    s.env[c.var] = c.value;
    std::string why = error_of(s, {});
    EXPECT_EQ(why.rfind(c.message, 0), 0u) << c.var << "=" << c.value << ": " << why;
  }
}

TEST(MasterEnvironment, MultiNodeStaticJobsTakeMasterAddrAndPortAsKubernetesSetsThem) {
  // What Kubeflow's training operator gives a PyTorchJob's worker pod 1.
  Slurm pod{Env{{"PET_NNODES", "2"},
                {"PET_NODE_RANK", "1"},
                {"PET_NPROC_PER_NODE", "2"},
                {"MASTER_ADDR", "job-master-0"},
                {"MASTER_PORT", "23456"},
                {"WORLD_SIZE", "4"},
                {"RANK", "1"}}};
  auto c = pod.parse({});
  EXPECT_EQ(c.rendezvous.max_nodes, 2);
  EXPECT_EQ(c.rendezvous.node_rank, 1);
  EXPECT_EQ(c.rendezvous.master_addr, "job-master-0");
  EXPECT_EQ(c.rendezvous.master_port, 23456);
  EXPECT_EQ(c.agent.spec.local_world_size, 2);
  EXPECT_EQ(pod.parse({"--master_port=999"}).rendezvous.master_port, 999) << "flags win";

  Slurm single{Env{{"MASTER_ADDR", "elsewhere"}, {"MASTER_PORT", "23456"}}};
  EXPECT_EQ(single.parse({}).rendezvous.master_port, 0) << "one node keeps its free port";

  Slurm slurm;  // an old wrapper script's exports win over the step's defaults
  slurm.env["MASTER_ADDR"] = "head";
  slurm.env["MASTER_PORT"] = "4444";
  auto s = slurm.parse({});
  EXPECT_EQ(s.rendezvous.master_addr, "head");
  EXPECT_EQ(s.rendezvous.master_port, 4444);
  EXPECT_TRUE(s.port_hint.empty()) << "the port was not ddprun's choice";
}

TEST(NodeAddress, AliasesAndScontrolOutput) {
  EXPECT_EQ(node_alias_address("a:10.0.0.1:ha,b:10.0.0.2:hb", "b"), "10.0.0.2");
  EXPECT_EQ(node_alias_address("ab:10.0.0.1:x,b:[fe80::1]:hb", "b"), "fe80::1");
  EXPECT_FALSE(node_alias_address("a:10.0.0.1:ha", "b"));
  EXPECT_FALSE(node_alias_address("", "b"));
  EXPECT_EQ(
      scontrol_node_addr("NodeName=n1 Arch=x86_64 NodeAddr=127.0.0.1 NodeHostName=localhost\n"),
      "127.0.0.1");
  EXPECT_FALSE(scontrol_node_addr("Node n9 not found"));
  EXPECT_FALSE(scontrol_node_addr("NodeName=n1 NodeAddr=(null) x"));
}

}  // namespace
}  // namespace ddprun::launcher
