#include "launcher/ssh_job.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>

#include "common/error.h"

namespace ddprun::launcher {
namespace {

// What /bin/sh makes of `word`: printf's argument, read back.
std::string through_shell(const std::string& quoted) {
  std::string command = "printf %s " + quoted;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  std::string out;
  char buf[256];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe.get())) > 0) out.append(buf, n);
  return out;
}

TEST(ShellQuote, EveryByteButNulSurvivesTheShell) {
  std::string all;
  for (int c = 1; c < 256; ++c) all += static_cast<char>(c);
  for (const std::string& s : {std::string("plain"), std::string(""), std::string("a b  c"),
                               std::string("it's \"quoted\" $HOME `id` \\ ;|&"), all}) {
    EXPECT_EQ(through_shell(shell_quote(s)), s);
  }
}

SshJob two_hosts() {
  SshJob job;
  job.hosts = {{"nodeA", 0, {}}, {"nodeB", 4, {1, 3}}};
  job.remote_ddprun = "/opt/ddprun/bin/ddprun";
  job.cwd = "/work dir";
  job.env = {{"NCCL_DEBUG", "INFO"}};
  job.agent_args = {"--max_restarts=1", "--nproc_per_node", "2"};
  job.master_addr = "10.0.0.1";
  job.master_port = 23456;
  job.run_id = "r1";
  job.script_and_args = {"train.py", "--lr", "0.1"};
  return job;
}

TEST(SshJob, RemoteCommandCarriesTheRendezvousAndTheHostsShare) {
  SshJob job = two_hosts();
  EXPECT_EQ(remote_command(job, 0),
            "cd '/work dir' && exec 'env' 'NCCL_DEBUG=INFO' '/opt/ddprun/bin/ddprun' "
            "'--max_restarts=1' '--nproc_per_node' '2' '--nnodes=2' '--node_rank=0' "
            "'--master_addr=10.0.0.1' '--master_port=23456' '--rdzv_conf=token_file=-' "
            "'--rdzv_id=r1' "
            "'--stop_on_stdin_close' '--stdin_timeout=15' "
            "'--log_line_prefix_template=[nodeA:${rank}]:' '--' "
            "'train.py' '--lr' '0.1'");
  std::string node1 = remote_command(job, 1);
  EXPECT_NE(node1.find("'CUDA_VISIBLE_DEVICES=1,3'"), std::string::npos) << node1;
  EXPECT_NE(node1.find("'--node_rank=1'"), std::string::npos) << node1;
  EXPECT_NE(node1.find("'--nproc_per_node=2' '--log_line_prefix_template=[nodeB:${rank}]:'"),
            std::string::npos)
      << node1;
  job.prefix_given = true;
  EXPECT_EQ(remote_command(job, 1).find("--log_line_prefix_template"), std::string::npos);
}

TEST(SshJob, SshArgvTimesOutAndNeverAsks) {
  SshJob job = two_hosts();
  job.ssh_cmd = {"ssh", "-F", "cfg"};
  job.ssh_timeout_s = 7;
  job.keepalive_s = 2;
  auto argv = ssh_argv(job, 1);
  ASSERT_EQ(argv.size(), 14u);
  EXPECT_EQ(std::vector<std::string>(argv.begin(), argv.begin() + 13),
            (std::vector<std::string>{"ssh", "-F", "cfg", "-T", "-o", "BatchMode=yes", "-o",
                                      "ServerAliveCountMax=3", "-o", "ServerAliveInterval=2", "-o",
                                      "ConnectTimeout=7", "nodeB"}));
  EXPECT_EQ(argv[13], remote_command(job, 1));
  // The agent stops after 3 keep-alive intervals without a line from the controller.
  EXPECT_NE(argv[13].find("'--stdin_timeout=6'"), std::string::npos) << argv[13];
}

TEST(SshJob, ExportedEnvironmentDefaultsFileAndFlags) {
  std::vector<std::string> environ_entries = {
      "NCCL_IB_HCA=mlx5", "PYTHONPATH=/x",      "HOME=/root",         "CUDA_HOME=/cuda",
      "MINE=1",           "PET_MAX_RESTARTS=2", "TORCH_LOGS=+dynamo", "OMP_NUM_THREADS=4"};
  auto env = exported_env(environ_entries, "# site\nHF_HOME=/data/hf\nNCCL_IB_HCA=mlx4\n",
                          {"MINE", "EXTRA=a b=c"});
  EXPECT_EQ(env, (std::vector<std::pair<std::string, std::string>>{{"CUDA_HOME", "/cuda"},
                                                                   {"EXTRA", "a b=c"},
                                                                   {"HF_HOME", "/data/hf"},
                                                                   {"MINE", "1"},
                                                                   {"NCCL_IB_HCA", "mlx4"},
                                                                   {"OMP_NUM_THREADS", "4"},
                                                                   {"PET_MAX_RESTARTS", "2"},
                                                                   {"PYTHONPATH", "/x"},
                                                                   {"TORCH_LOGS", "+dynamo"}}));
  EXPECT_THROW(exported_env({}, "", {"UNSET_HERE"}), UsageError);
  EXPECT_THROW(exported_env({}, "", {"1BAD=x"}), UsageError);
  try {
    exported_env({}, "A=1\nnot a line\n", {});
    ADD_FAILURE();
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), ".ddprun_env:2: expected VAR=value, not 'not a line'");
  }
}

}  // namespace
}  // namespace ddprun::launcher
