// Every bad command line gets one line naming the flag and value, and exit 2;
// a script that cannot run gets 127/126.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <regex>

#include "tests/blackbox/ddprun_process.h"

namespace ddprun::test {
namespace {

struct BadFlags {
  std::vector<std::string> args;
  std::string must_mention;
};

void PrintTo(const BadFlags& bad, std::ostream* os) {
  for (const auto& a : bad.args) *os << a << " ";
}

class UsageErrors : public ::testing::TestWithParam<BadFlags> {};

TEST_P(UsageErrors, OneLineNamingTheFlagAndExit2) {
  const BadFlags& bad = GetParam();
  std::vector<std::string> args = bad.args;
  Finished f = run_ddprun(args, {{"CUDA_VISIBLE_DEVICES", ""}});
  EXPECT_EQ(f.code, 2) << f.err;
  EXPECT_EQ(f.out, "");
  EXPECT_EQ(std::count(f.err.begin(), f.err.end(), '\n'), 1) << f.err;
  EXPECT_NE(f.err.find(bad.must_mention), std::string::npos) << f.err;
}

const std::string kW = "/bin/true";

INSTANTIATE_TEST_SUITE_P(
    Flags, UsageErrors,
    ::testing::Values(BadFlags{{"--nnodes=abc", kW}, "--nnodes=abc"},
                      BadFlags{{"--nnodes=3:2", kW}, "--nnodes=3:2"},
                      BadFlags{{"--nnodes=0", kW}, "--nnodes=0"},
                      BadFlags{{"--nnodes=0:2", kW}, "--nnodes=0:2"},
                      BadFlags{{"--nproc_per_node=0", kW}, "--nproc_per_node=0"},
                      BadFlags{{"--nproc_per_node=many", kW}, "--nproc_per_node=many"},
                      BadFlags{{"--nproc_per_node=-2", kW}, "--nproc_per_node=-2"},
                      BadFlags{{"--nproc_per_node=gpu", kW}, "--nproc_per_node=gpu"},
                      BadFlags{{"-m", "--no_python", kW}, "--no_python"},
                      BadFlags{{"--rdzv_conf=join_timeout", kW}, "--rdzv_conf"},
                      BadFlags{{"--rdzv_conf=join_timeout=-1", kW}, "join_timeout"},
                      BadFlags{{"--redirects=5", kW}, "--redirects=5"},
                      BadFlags{{"--tee=0:x", kW}, "--tee=0:x"},
                      BadFlags{{"--local_ranks_filter=a,b", kW}, "--local_ranks_filter"},
                      BadFlags{{"--max_restarts=-1", kW}, "--max_restarts=-1"},
                      BadFlags{{"--master_port=70000", kW}, "--master_port=70000"},
                      BadFlags{{"--grace_period=0", kW}, "--grace_period=0"},
                      BadFlags{{"--rdzv_backend=zookeeper", kW}, "zookeeper"},
                      BadFlags{{"--bogus_flag", kW}, "--bogus_flag"},
                      BadFlags{{"--nproc_per_node"}, "--nproc_per_node"},
                      BadFlags{{"--standalone"}, "training script"},
                      BadFlags{{"--log_level=loud", kW}, "--log_level=loud"}));

TEST(UsageErrorsEnv, PetVariablesAreNamedInErrors) {
  Finished f = run_ddprun({"/bin/true"}, {{"PET_NPROC_PER_NODE", "zero"}});
  EXPECT_EQ(f.code, 2);
  EXPECT_NE(f.err.find("PET_NPROC_PER_NODE=zero"), std::string::npos) << f.err;
}

TEST(ScriptErrors, MissingScriptIs127AndUnexecutableIs126) {
  Finished missing = run_ddprun({"/nonexistent/train.py"}, {{"PYTHON_EXEC", "/usr/bin/python3"}});
  EXPECT_EQ(missing.code, 127);
  EXPECT_NE(missing.err.find("cannot run the training script: '/nonexistent/train.py' not found"),
            std::string::npos)
      << missing.err;
  Finished missing_bin = run_ddprun({"--no_python", "no-such-program-xyz"});
  EXPECT_EQ(missing_bin.code, 127);
  EXPECT_NE(missing_bin.err.find("cannot run the training program: 'no-such-program-xyz' not found"),
            std::string::npos)
      << missing_bin.err;
  std::string dir = make_temp_dir();
  std::string plain = dir + "/plain.sh";
  std::ofstream(plain) << "echo hi\n";
  ::chmod(plain.c_str(), 0644);
  Finished noexec = run_ddprun({"--no_python", plain});
  EXPECT_EQ(noexec.code, 126);
  EXPECT_NE(noexec.err.find(plain), std::string::npos);
  Finished no_python = run_ddprun({"x.py"}, {{"PYTHON_EXEC", "/nonexistent/python"}});
  EXPECT_EQ(no_python.code, 127);
  // The interpreter is named as such, not taken for the script.
  EXPECT_NE(no_python.err.find("cannot run the Python interpreter PYTHON_EXEC=/nonexistent/python: "
                               "'/nonexistent/python' not found"),
            std::string::npos)
      << no_python.err;
}

// A warning about the command line has the prefix every other warning has.
TEST(Warnings, ACommandLineWarningHasTheLogsOnePrefix) {
  Finished f = run_ddprun({"--no_tracking", "--local_ranks_filter=5", "--no_python", "/bin/true"},
                          {{"OMP_NUM_THREADS", "1"}});
  EXPECT_EQ(f.code, 0) << f.err;
  EXPECT_NE(f.err.find("] warning: --local_ranks_filter=5: this node runs local rank 0, not 5"),
            std::string::npos)
      << f.err;
  EXPECT_EQ(f.err.find("[ddprun pid "), f.err.rfind("[ddprun pid ")) << "one warning\n" << f.err;
  EXPECT_EQ(f.err.find("ddprun: warning:"), std::string::npos) << f.err;
}

TEST(HelpAndVersion, ExitZero) {
  Finished help = run_ddprun({"--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("--nproc_per_node"), std::string::npos);
  EXPECT_NE(help.out.find("128+S"), std::string::npos) << "exit-code policy";
  // The commands beside launching are named there, each with its own help.
  EXPECT_NE(help.out.find("\nCommands:\n  ddprun runs VERB"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("  ddprun completion SHELL"), std::string::npos) << help.out;
  Finished completion_help = run_ddprun({"completion", "--help"});
  EXPECT_EQ(completion_help.code, 0);
  EXPECT_EQ(completion_help.out.rfind("usage: ddprun completion bash|zsh|tcsh\n", 0), 0u);
  Finished version = run_ddprun({"--version"});
  EXPECT_EQ(version.code, 0);
  EXPECT_EQ(version.out.rfind("ddprun ", 0), 0u);
  // The commit it was built from, and how it is linked.
  EXPECT_TRUE(std::regex_search(version.out,
                                std::regex(R"(^ddprun \d+\.\d+\.\d+ \(commit ([0-9a-f]{12}(-dirty)?|unknown), )"
                                           R"((portable|dynamically linked))")))
      << version.out;
}

}  // namespace
}  // namespace ddprun::test
