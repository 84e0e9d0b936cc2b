#include "launcher/cli.h"

#include <gtest/gtest.h>

#include <map>

#include "common/error.h"

namespace ddprun::launcher {
namespace {

struct Cli {
  std::map<std::string, std::string> env;
  int cpus = 6;
  int gpus = 0;
  int xpus = 0;

  LaunchConfig parse(std::vector<std::string> args) {
    args.insert(args.begin(), "ddprun");
    std::vector<const char*> argv;
    for (auto& a : args) argv.push_back(a.c_str());
    EnvLookup lookup = [this](const std::string& k) -> std::optional<std::string> {
      auto it = env.find(k);
      return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
    return parse_command_line(
        static_cast<int>(argv.size()), argv.data(), lookup,
        DeviceCounter{[this] { return cpus; }, [this] { return gpus; }, [this] { return xpus; }});
  }
};

TEST(Cli, Defaults) {
  auto c = Cli{}.parse({"train.py"});
  EXPECT_EQ(c.script, "train.py");
  EXPECT_EQ(c.kind, ScriptKind::kPythonFile);
  EXPECT_EQ(c.agent.spec.local_world_size, 1);
  EXPECT_EQ(c.rendezvous.master_addr, "127.0.0.1");
  EXPECT_EQ(c.rendezvous.master_port, 0) << "one node: the agent's store on a free port";
  EXPECT_EQ(c.agent.run_id, "none");
  EXPECT_EQ(c.agent.spec.role, "default");
  EXPECT_EQ(c.agent.grace_period.count(), 30000);
  EXPECT_TRUE(c.agent.omp_num_threads.empty());
}

TEST(Cli, MasterPortForStaticJobs) {
  EXPECT_EQ(Cli{}.parse({"--master_port=1234", "t"}).rendezvous.master_port, 1234);
  auto multi = Cli{}.parse({"--nnodes=2", "--node_rank=1", "t"});
  EXPECT_EQ(multi.rendezvous.master_port, 29500);
  EXPECT_EQ(multi.rendezvous.node_rank, 1);
  EXPECT_THROW(Cli{}.parse({"--nnodes=1:2", "t"}), UsageError);
  EXPECT_THROW(Cli{}.parse({"--nnodes=2", "--rdzv_backend=c10d", "t"}), UsageError);
  auto timeout = Cli{}.parse({"--rdzv_conf=join_timeout=2.5", "t"});
  EXPECT_EQ(timeout.rendezvous.join_timeout.count(), 2500);
}

// The message of the UsageError parsing `args` throws ("" when it parses).
std::string usage_error(Cli cli, std::vector<std::string> args) {
  try {
    cli.parse(std::move(args));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(Cli, TorchrunTwoFlagsEventLogHandlerLogsSpecsAndXpu) {
  EXPECT_FALSE(Cli{}.parse({"t.py"}).console_events);
  EXPECT_TRUE(Cli{}.parse({"--event_log_handler=console", "t.py"}).console_events);
  EXPECT_TRUE(Cli{}.parse({"--event-log-handler", "console", "t.py"}).console_events);
  EXPECT_FALSE(Cli{}.parse({"--event_log_handler=null", "t.py"}).console_events);
  Cli from_env;
  from_env.env["PET_EVENT_LOG_HANDLER"] = "console";
  EXPECT_TRUE(from_env.parse({"t.py"}).console_events);
  EXPECT_EQ(usage_error(Cli{}, {"--event_log_handler=file", "t.py"}),
            "--event_log_handler=file: expected null or console");
  std::string specs = usage_error(Cli{}, {"--logs-specs=my.Specs", "t.py"});
  EXPECT_NE(specs.find("--logs_specs=my.Specs: torchrun's LogsSpecs are Python plug-ins"),
            std::string::npos)
      << specs;
  Cli specs_env;
  specs_env.env["PET_LOGS_SPECS"] = "x";
  EXPECT_NE(usage_error(specs_env, {"t.py"}).find("PET_LOGS_SPECS=x"), std::string::npos);
  EXPECT_NE(usage_error(Cli{}, {"--nproc_per_node=xpu", "t.py"})
                .find("--nproc_per_node=xpu: no Intel XPU is visible on this node"),
            std::string::npos);
  Cli with_xpus;
  with_xpus.xpus = 2;
  EXPECT_EQ(with_xpus.parse({"--nproc_per_node=xpu", "t.py"}).agent.spec.local_world_size, 2);
  EXPECT_NE(usage_error(Cli{}, {"--nproc_per_node=tpu", "t.py"}).find("cpu, gpu, xpu or auto"),
            std::string::npos);
}

// As torchrun's argparse: a flag given again takes its last value (wrapper scripts append
// overrides), whatever its spelling; a switch given twice is simply on.
TEST(Cli, AFlagGivenTwiceTakesItsLastValue) {
  Cli cli;
  EXPECT_EQ(cli.parse({"--nproc_per_node=2", "--nproc_per_node=1", "t.py"})
                .agent.spec.local_world_size,
            1);
  EXPECT_EQ(cli.parse({"--nproc-per-node=4", "--nproc_per_node", "3", "t.py"})
                .agent.spec.local_world_size,
            3);
  auto c = cli.parse({"--max_restarts=5", "--no_python", "--no-python", "--max-restarts=2", "t"});
  EXPECT_EQ(c.kind, ScriptKind::kExecutable);
  EXPECT_EQ(c.agent.spec.max_restarts, 2);
}

// --standalone is one node: more nodes is an error; the rendezvous flags it overrides
// are said.
TEST(Cli, StandaloneIsOneNodeAndSaysWhatItOverrides) {
  EXPECT_THROW(Cli{}.parse({"--standalone", "--nnodes=2", "t.py"}), UsageError);
  EXPECT_THROW(Cli{}.parse({"--standalone", "--nnodes=1:2", "t.py"}), UsageError);
  auto c = Cli{}.parse({"--standalone", "--nnodes=1", "--rdzv_id=mine", "t.py"});
  ASSERT_EQ(c.notices.size(), 1u);
  EXPECT_EQ(c.notices[0],
            "--standalone overrides --rdzv_id=mine (as torchrun: a store of its own on "
            "a free port, a fresh run id)");
  EXPECT_TRUE(Cli{}.parse({"--standalone", "t.py"}).notices.empty());
}

// Local ranks this node does not have are said, not filtered away in silence.
TEST(Cli, ARanksFilterBeyondTheWorkersIsSaid) {
  auto c = Cli{}.parse({"--nproc_per_node=2", "--local_ranks_filter=5", "t.py"});
  ASSERT_EQ(c.notices.size(), 1u);
  EXPECT_EQ(c.notices[0],
            "--local_ranks_filter=5: this node runs local ranks 0-1, not 5; no "
            "worker's output is shown on the console");
  EXPECT_TRUE(Cli{}.parse({"--nproc_per_node=2", "--local_ranks_filter=1", "t.py"}).notices.empty());
}

TEST(Cli, BothSpellingsAndAbbreviations) {
  EXPECT_EQ(Cli{}.parse({"--nproc-per-node=3", "t.py"}).agent.spec.local_world_size, 3);
  EXPECT_EQ(Cli{}.parse({"--nproc_per_node", "3", "t.py"}).agent.spec.local_world_size, 3);
  EXPECT_EQ(Cli{}.parse({"--max-restarts", "2", "t.py"}).agent.spec.max_restarts, 2);
  EXPECT_EQ(Cli{}.parse({"--nproc=2", "t.py"}).agent.spec.local_world_size, 2);
}

TEST(Cli, EverythingAfterTheScriptBelongsToIt) {
  auto c = Cli{}.parse({"-m", "pkg.train", "--nproc_per_node=9", "-m", "x"});
  EXPECT_EQ(c.kind, ScriptKind::kPythonModule);
  EXPECT_EQ(c.script, "pkg.train");
  EXPECT_EQ(c.script_args, (std::vector<std::string>{"--nproc_per_node=9", "-m", "x"}));
  EXPECT_EQ(c.agent.spec.local_world_size, 1);
  auto d = Cli{}.parse({"--", "--weird-name.py", "a"});
  EXPECT_EQ(d.script, "--weird-name.py");
}

TEST(Cli, ShortFlagsTakeAttachedOrSeparateValues) {
  auto c = Cli{}.parse({"-r3", "-t", "0:1", "t.py"});
  EXPECT_EQ(c.agent.spec.redirects.all, agent::Std::kAll);
  EXPECT_EQ(c.agent.spec.tee.for_rank(0), agent::Std::kOut);
}

TEST(Cli, PetEnvironmentDefaults) {
  Cli cli;
  cli.env = {{"PET_NPROC_PER_NODE", "4"}, {"PET_STANDALONE", "1"}, {"PET_MAX_RESTARTS", "2"}};
  auto c = cli.parse({"t.py"});
  EXPECT_EQ(c.agent.spec.local_world_size, 4);
  EXPECT_TRUE(c.standalone);
  EXPECT_EQ(c.agent.spec.max_restarts, 2);
  EXPECT_EQ(c.agent.omp_num_threads, "1");
  cli.env["OMP_NUM_THREADS"] = "8";
  EXPECT_TRUE(cli.parse({"t.py"}).agent.omp_num_threads.empty());
}

TEST(Cli, NprocCpuGpuAuto) {
  Cli cli;
  EXPECT_EQ(cli.parse({"--nproc_per_node=cpu", "t"}).agent.spec.local_world_size, 6);
  EXPECT_EQ(cli.parse({"--nproc_per_node=auto", "t"}).agent.spec.local_world_size, 6);
  EXPECT_THROW(cli.parse({"--nproc_per_node=gpu", "t"}), UsageError);
  cli.gpus = 2;
  EXPECT_EQ(cli.parse({"--nproc_per_node=gpu", "t"}).agent.spec.local_world_size, 2);
  EXPECT_EQ(cli.parse({"--nproc_per_node=auto", "t"}).agent.spec.local_world_size, 2);
}

TEST(Cli, StandaloneIgnoresRendezvousFlags) {
  auto c = Cli{}.parse({"--standalone", "--rdzv_backend=static", "--nnodes=1", "t.py"});
  EXPECT_TRUE(c.standalone);
  EXPECT_EQ(c.rendezvous.backend, rendezvous::Backend::kC10d);
}

TEST(Cli, PrefixTemplateFlagPrefixesAllOutput) {
  auto c = Cli{}.parse({"--log-line-prefix-template=${rank}|", "t.py"});
  EXPECT_EQ(c.agent.spec.log_line_prefix_template, "${rank}|");
  EXPECT_TRUE(c.agent.spec.prefix_all_output);
  Cli env;
  env.env["TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"] = "${rank}>";
  auto d = env.parse({"t.py"});
  EXPECT_EQ(d.agent.spec.log_line_prefix_template, "${rank}>");
  EXPECT_FALSE(d.agent.spec.prefix_all_output);
}

TEST(Cli, Errors) {
  Cli cli;
  EXPECT_THROW(cli.parse({}), UsageError);
  EXPECT_THROW(cli.parse({"--no_python", "--module", "t"}), UsageError);
  EXPECT_THROW(cli.parse({"--standalone=1", "t"}), UsageError);
  EXPECT_THROW(cli.parse({"--node_rank=1", "t"}), UsageError);
  EXPECT_THROW(cli.parse({"--nnodes=2", "--node_rank=2", "t"}), UsageError);
  EXPECT_THROW(cli.parse({"--start_method=thread", "t"}), UsageError);
  EXPECT_THROW(cli.parse({"-x", "t"}), UsageError);
  EXPECT_TRUE(cli.parse({"--help"}).help);
  EXPECT_TRUE(cli.parse({"--version"}).version);
}

}  // namespace
}  // namespace ddprun::launcher

namespace ddprun::launcher {
namespace {

TEST(Cli, LogLevelFromFlagOrDdprunLogLevel) {
  Cli cli;
  EXPECT_EQ(cli.parse({"t"}).log_level, "warn");
  cli.env["DDPRUN_LOG_LEVEL"] = "debug";
  EXPECT_EQ(cli.parse({"t"}).log_level, "debug");
  EXPECT_EQ(cli.parse({"--log_level=error", "t"}).log_level, "error");
}

// torchrun 2.14's flags: --shutdown-timeout (and its variable), --virtual-local-rank,
// --duplicate-*-filters, --print-completion.
TEST(Cli, TorchrunTwoFourteenFlags) {
  using std::chrono::milliseconds;
  EXPECT_EQ(Cli{}.parse({"--shutdown-timeout=7", "t.py"}).agent.grace_period, milliseconds(7000));
  EXPECT_EQ(Cli{}.parse({"--shutdown_timeout", "0", "t.py"}).agent.grace_period, milliseconds(0));
  Cli from_env;
  from_env.env["TORCH_ELASTIC_SHUTDOWN_TIMEOUT"] = "9";
  EXPECT_EQ(from_env.parse({"t.py"}).agent.grace_period, milliseconds(9000));
  EXPECT_EQ(from_env.parse({"--grace_period=2", "t.py"}).agent.grace_period, milliseconds(2000));
  EXPECT_EQ(usage_error(Cli{}, {"--grace_period=3", "--shutdown_timeout=4", "t.py"}),
            "--grace_period=3 and --shutdown_timeout=4 set the same time (between SIGTERM and "
            "SIGKILL): give one");
  from_env.env["TORCH_ELASTIC_SHUTDOWN_TIMEOUT"] = "soon";
  EXPECT_NE(usage_error(from_env, {"t.py"}).find("TORCH_ELASTIC_SHUTDOWN_TIMEOUT=soon"),
            std::string::npos);

  auto filters = Cli{}.parse({"--duplicate-stdout-filters=apple,or,,ange,", "t.py"});
  EXPECT_EQ(filters.agent.spec.duplicate_stdout_filters,
            (std::vector<std::string>{"apple", "or,ange"}));
  EXPECT_TRUE(filters.agent.spec.duplicate_stderr_filters.empty());
  EXPECT_EQ(Cli{}
                .parse({"--duplicate_stderr_filters", "NaN", "t.py"})
                .agent.spec.duplicate_stderr_filters,
            std::vector<std::string>{"NaN"});

  Cli gpus;
  gpus.env["CUDA_VISIBLE_DEVICES"] = "3, 1,2";
  auto v = gpus.parse({"--virtual-local-rank", "--nproc_per_node=2", "t.py"});
  EXPECT_TRUE(v.agent.spec.virtual_local_rank);
  EXPECT_EQ(v.agent.spec.virtual_devices, (std::vector<std::string>{"3", "1"}));
  EXPECT_EQ(Cli{}
                .parse({"--virtual_local_rank", "--nproc_per_node=2", "t.py"})
                .agent.spec.virtual_devices,
            (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(usage_error(gpus, {"--virtual_local_rank", "--nproc_per_node=4", "t.py"}),
            "--virtual_local_rank: 4 workers, but CUDA_VISIBLE_DEVICES=3, 1,2 names 3 device(s)");
  EXPECT_FALSE(Cli{}.parse({"t.py"}).agent.spec.virtual_local_rank);

  auto completion = Cli{}.parse({"--print-completion", "zsh"});  // no script needed
  ASSERT_TRUE(completion.print_completion);
  EXPECT_EQ(*completion.print_completion, "zsh");
  EXPECT_FALSE(Cli{}.parse({"t.py"}).print_completion);
  EXPECT_EQ(Cli{}.parse({"--signals_to_handle=SIGTERM", "t.py"}).agent.signals_to_handle,
            "SIGTERM");
}

}  // namespace
}  // namespace ddprun::launcher

namespace ddprun::launcher {
namespace {

// Settings a user mistypes: each is one error naming the flag, or one warning where the
// job's shape makes a flag do nothing.
TEST(CliSettings, ACheckpointDirMustBeAnExistingDirectory) {
  std::string dir = ::testing::TempDir();
  EXPECT_EQ(Cli{}.parse({"--checkpoint_dir=" + dir, "t"}).agent.checkpoint_dir, dir);
  EXPECT_NE(usage_error(Cli{}, {"--checkpoint_dir=/nonexistent/dir", "t"})
                .find("--checkpoint_dir=/nonexistent/dir: does not exist"),
            std::string::npos);
  EXPECT_NE(usage_error(Cli{}, {"--checkpoint_dir=/etc/passwd", "t"})
                .find("--checkpoint_dir=/etc/passwd: is not a directory"),
            std::string::npos);
  EXPECT_EQ(usage_error(Cli{}, {"--hosts=a,b", "--checkpoint_dir=/on/the/nodes", "t"}), "")
      << "a controller runs no workers: the nodes check their own";
}

TEST(CliSettings, MetricsFlagsNeedTheirPortAndAWritableDiscoveryFile) {
  EXPECT_NE(usage_error(Cli{}, {"--metrics_host=0.0.0.0", "t"})
                .find("--metrics_host=0.0.0.0: needs --metrics_port"),
            std::string::npos);
  EXPECT_EQ(Cli{}.parse({"--metrics_port=0", "--metrics_host=0.0.0.0", "t"}).agent.metrics.host,
            "0.0.0.0");
  std::string in_temp = ::testing::TempDir() + "/ddprun-sd.json";
  EXPECT_EQ(
      Cli{}.parse({"--metrics_port=0", "--metrics_sd_file=" + in_temp, "t"}).agent.metrics.sd_file,
      in_temp);
  EXPECT_NE(usage_error(Cli{}, {"--metrics_port=0", "--metrics_sd_file=/nonexistent/sd.json", "t"})
                .find("its directory /nonexistent does not exist"),
            std::string::npos);
  EXPECT_NE(usage_error(Cli{}, {"--metrics_port=0", "--metrics_sd_file=/tmp", "t"})
                .find("is a directory"),
            std::string::npos);
}

TEST(CliSettings, AQuarantineCooldownNeedsAFailureLimit) {
  std::vector<std::string> elastic = {"--nnodes=2:3", "--rdzv_backend=c10d", "--rdzv_endpoint=h:1"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), elastic.begin(), elastic.end());
    more.push_back("t");
    return more;
  };
  EXPECT_NE(usage_error(Cli{}, with({"--quarantine_cooldown=20"}))
                .find("--quarantine_cooldown=20: needs --node_failure_limit"),
            std::string::npos);
  EXPECT_EQ(usage_error(Cli{}, with({"--quarantine_cooldown=20", "--node_failure_limit=1"})), "");
}

TEST(CliSettings, AStragglerWindowIsAtMostAnHour) {
  EXPECT_NE(usage_error(Cli{}, {"--straggler_window=1e9", "t"}).find("--straggler_window=1e9"),
            std::string::npos);
  EXPECT_EQ(Cli{}.parse({"--straggler_window=3600", "t"}).agent.stragglers.window,
            std::chrono::hours(1));
}

TEST(CliSettings, ExcludingAStragglerOutsideAnElasticJobIsSaidToDoNothing) {
  auto standalone = Cli{}.parse({"--standalone", "--straggler_action=exclude", "t"});
  ASSERT_EQ(standalone.notices.size(), 1u);
  EXPECT_NE(standalone.notices[0].find("--straggler_action=exclude: only an elastic job"),
            std::string::npos);
  Cli with_token;
  with_token.env["DDPRUN_JOB_TOKEN"] = "x";
  auto elastic = with_token.parse({"--nnodes=2:3", "--rdzv_backend=c10d", "--rdzv_endpoint=h:1",
                                   "--straggler_action=exclude", "t"});
  EXPECT_TRUE(elastic.notices.empty()) << elastic.notices[0];
}

}  // namespace
}  // namespace ddprun::launcher
