// A node's preflight: the built-in checks against a made-up node, the site's health
// command, and the flags that choose them.
#include <gtest/gtest.h>

#include "common/coro.h"  // before Asio's other coroutine headers

#include <algorithm>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <optional>

#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "agent/preflight/health_command.h"
#include "agent/preflight/node_checks.h"
#include "common/error.h"
#include "launcher/cli.h"
#include "tests/helpers/run_task.h"
#include "tests/fakes/fake_node_probe.h"

namespace ddprun::agent {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

using FakeNode = testing::FakeNodeProbe;

PreflightOptions options(int workers = 2) {
  PreflightOptions o;
  o.write_dirs = {"/logs", "/runs"};
  o.local_workers = workers;
  return o;
}

TEST(Preflight, AHealthyNodePassesEveryCheck) {
  FakeNode node;
  EXPECT_TRUE(check_node(options(), node).empty());
}

TEST(Preflight, EachCheckNamesWhatItFound) {
  FakeNode node;
  node.free["/runs"] = 12 * kMiB;
  node.shm = 64 * kMiB;  // Docker's default
  node.files = 256;
  node.memory = 300 * kMiB;
  auto found = check_node(options(), node);
  ASSERT_EQ(found.size(), 4u);
  EXPECT_EQ(found[0].check, "disk");
  EXPECT_NE(found[0].problem.find("/runs: 12 MiB free"), std::string::npos) << found[0].problem;
  EXPECT_EQ(found[1].check, "shm");
  EXPECT_NE(found[1].problem.find("/dev/shm: 64 MiB free, 2 worker(s) need 256 MiB"),
            std::string::npos)
      << found[1].problem;
  EXPECT_EQ(found[2].check, "nofile");
  EXPECT_NE(found[2].problem.find("limited to 256"), std::string::npos) << found[2].problem;
  EXPECT_EQ(found[3].check, "memory");
  EXPECT_NE(found[3].problem.find("300 MiB of memory available"), std::string::npos)
      << found[3].problem;
}

TEST(Preflight, WhatSharedMemoryTheWorkersNeedGrowsWithThemUpToACap) {
  FakeNode node;
  node.shm = 200 * kMiB;
  EXPECT_TRUE(check_node(options(1), node).empty()) << "128 MiB for one worker";
  EXPECT_EQ(check_node(options(2), node).size(), 1u);
  node.shm = kGiB;
  EXPECT_TRUE(check_node(options(512), node).empty()) << "never more than 1 GiB";
}

TEST(Preflight, ACheckLeftOutFindsNothing) {
  FakeNode node;
  node.shm = 16 * kMiB;
  node.files = 100;
  PreflightOptions o = options();
  o.checks = {Check::kDisk, Check::kMemory};
  EXPECT_TRUE(check_node(o, node).empty());
  o.checks.clear();  // --preflight=none
  node.free["/logs"] = 0;
  EXPECT_TRUE(check_node(o, node).empty());
}

TEST(Preflight, WhatCannotBeReadFailsNothing) {
  FakeNode node;
  node.shm.reset();  // no /dev/shm
  node.memory.reset();
  EXPECT_TRUE(check_node(options(), node).empty());
}

// GPUs as NVML reports them (the seam's fake): each fault named with its GPU.
TEST(Preflight, AFaultyGpuIsNamedWithWhatIsWrong) {
  FakeNode node;
  os::Nvml::Health healthy;
  healthy.uncorrected_ecc = 0;
  healthy.retired_pages_pending = false;
  healthy.row_remap_pending = false;
  healthy.row_remap_failed = false;
  healthy.clock_event_reasons = 0x1;  // idle: no fault
  os::Nvml::Health ecc = healthy;
  ecc.uncorrected_ecc = 2;
  os::Nvml::Health remap = healthy;
  remap.row_remap_pending = true;
  remap.retired_pages_pending = true;
  os::Nvml::Health hot = healthy;
  hot.clock_event_reasons = os::Nvml::kHwThermalSlowdown | os::Nvml::kHwPowerBrakeSlowdown;
  node.gpu_states = std::vector<GpuState>{
      {0, healthy}, {1, ecc}, {2, std::nullopt}, {3, remap}, {4, hot}, {5, os::Nvml::Health{}}};
  auto found = check_node(options(), node);
  std::string all;
  for (const auto& f : found) {
    EXPECT_EQ(f.check, "gpu");
    all += f.problem + "\n";
  }
  EXPECT_EQ(found.size(), 5u) << all;
  EXPECT_EQ(all.find("GPU 0"), std::string::npos) << all;
  EXPECT_NE(all.find("GPU 1: 2 uncorrectable ECC error(s)"), std::string::npos) << all;
  EXPECT_NE(all.find("GPU 2: NVML cannot open it"), std::string::npos) << all;
  EXPECT_NE(all.find("GPU 3: retired memory pages wait for a GPU reset"), std::string::npos) << all;
  EXPECT_NE(all.find("GPU 3: a memory row remap waits for a GPU reset"), std::string::npos) << all;
  EXPECT_NE(all.find("GPU 4: its clocks are held down (hardware thermal slowdown, power brake)"),
            std::string::npos)
      << all;
  EXPECT_EQ(all.find("GPU 5"), std::string::npos) << "a card that reports nothing: " << all;
}

TEST(Preflight, OnlyTheGpusTheWorkersMayUseAreChecked) {
  FakeNode node;
  os::Nvml::Health ecc;
  ecc.uncorrected_ecc = 1;
  node.gpu_states = std::vector<GpuState>{{0, os::Nvml::Health{}}, {1, ecc}};
  PreflightOptions o = options();
  o.visible_gpus = std::vector<int>{0};
  EXPECT_TRUE(check_node(o, node).empty()) << "GPU 1 is not this job's";
  o.visible_gpus = std::vector<int>{0, 7};
  auto found = check_node(o, node);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].problem, "CUDA_VISIBLE_DEVICES names GPU 7; the driver sees 2");
  node.gpu_states.reset();  // no driver: nothing to check
  EXPECT_TRUE(check_node(o, node).empty());
}

TEST(Preflight, FreeSpaceOfADirectoryNotMadeYetIsItsFileSystems) {
  PosixNodeProbe probe;
  auto made = probe.free_bytes("/tmp");
  auto later = probe.free_bytes("/tmp/ddprun-preflight-not-made/a/b");
  ASSERT_TRUE(made && later);
  EXPECT_GT(*later, 0u);
}

// The check's background child, whose pid it wrote to `marker`, is gone soon (the
// marker goes too).
void expect_gone(const std::string& marker) {
  std::ifstream in(marker);
  pid_t child = 0;
  in >> child;
  ASSERT_GT(child, 0);
  for (int i = 0; i < 200 && ::kill(child, 0) == 0; ++i) ::usleep(10'000);
  EXPECT_NE(::kill(child, 0), 0) << "the check's child " << child << " still runs";
  std::remove(marker.c_str());
}

// The check run on a loop of its own.
std::optional<Finding> health(const std::string& command, std::chrono::milliseconds timeout) {
  CancelSignal cancel;
  return testing::run_task(run_health_command(command, timeout, cancel));
}

TEST(HealthCommand, ExitZeroIsHealthy) {
  EXPECT_FALSE(health("echo fine; exit 0", std::chrono::seconds(30)));
}

TEST(HealthCommand, AFailureGivesItsStatusAndLastLines) {
  auto found = health("for i in 1 2 3 4 5 6 7; do echo line $i; done; "
                                  "echo 'GPU 3: double-bit ECC' >&2; exit 4",
                                  std::chrono::seconds(30));
  ASSERT_TRUE(found);
  EXPECT_EQ(found->check, "health_check");
  EXPECT_NE(found->problem.find("exited with status 4"), std::string::npos) << found->problem;
  EXPECT_NE(found->problem.find("line 7\nGPU 3: double-bit ECC"), std::string::npos)
      << found->problem;
  EXPECT_EQ(found->problem.find("line 3"), std::string::npos) << "the last five lines only";
}

TEST(HealthCommand, OneThatHangsIsKilledAtItsTimeoutWithWhatItLeftRunning) {
  std::string marker = "/tmp/ddprun-health-" + std::to_string(::getpid());
  auto found = health("sleep 600 & echo $! > " + marker + "; echo started; wait",
                                  std::chrono::milliseconds(300));
  ASSERT_TRUE(found);
  EXPECT_NE(found->problem.find("gave no verdict within 0.3 s"), std::string::npos)
      << found->problem;
  EXPECT_NE(found->problem.find("started"), std::string::npos) << found->problem;
  expect_gone(marker);  // its background child went with it (its process group)
}

TEST(HealthCommand, OneThatClosesItsOutputAndGoesOnIsBoundedToo) {
  auto found = health("exec >/dev/null 2>&1; sleep 600", std::chrono::milliseconds(300));
  ASSERT_TRUE(found);
  EXPECT_NE(found->problem.find("gave no verdict within 0.3 s"), std::string::npos)
      << found->problem;
}

// The agent's process launcher reaps every child of ddprun it sees exit, on the same
// loop: the check's verdict is its own still.
TEST(HealthCommand, ItsVerdictHoldsWhateverReapsDdprunsChildren) {
  boost::asio::io_context io;
  boost::asio::signal_set child_exits(io, SIGCHLD);
  bool checked = false;
  std::function<void()> reap = [&] {
    child_exits.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec || checked) return;
      int status = 0;
      while (::waitpid(-1, &status, WNOHANG) > 0) {
      }
      reap();
    });
  };
  reap();
  auto check = [&]() -> Task<std::optional<Finding>> {
    CancelSignal cancel;
    std::optional<Finding> found;
    std::exception_ptr error;
    try {
      found = co_await run_health_command("sleep 0.2; exit 4", std::chrono::seconds(30), cancel);
    } catch (...) {
      error = std::current_exception();
    }
    checked = true;  // a SIGCHLD already taken still calls the reaper once
    child_exits.cancel();
    if (error) std::rethrow_exception(error);
    co_return found;
  };
  auto found = testing::run_task(io, check());
  ASSERT_TRUE(found);
  EXPECT_NE(found->problem.find("exited with status 4"), std::string::npos) << found->problem;
}

// The check is awaited: the loop goes on meanwhile, and a cancel (a stop signal)
// kills it and whatever it started at once.
TEST(HealthCommand, ACancelEndsItAtOnceWithWhatItStarted) {
  std::string marker = "/tmp/ddprun-health-cancel-" + std::to_string(::getpid());
  boost::asio::io_context io;
  CancelSignal cancel("health check cancelled");
  // Cancelled once the check has started its child, which the loop looks for meanwhile.
  boost::asio::steady_timer look(io);
  std::function<void()> again = [&] {
    look.expires_after(std::chrono::milliseconds(10));
    look.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      std::ifstream written(marker);
      pid_t pid = 0;
      if (written >> pid) {
        cancel.cancel();
      } else {
        again();
      }
    });
  };
  again();
  try {
    testing::run_task(io, run_health_command("sleep 600 & echo $! > " + marker + "; wait",
                                             std::chrono::seconds(600), cancel));
    FAIL() << "the check ended by itself";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "health check cancelled");
  }
  expect_gone(marker);
}

}  // namespace
}  // namespace ddprun::agent

namespace ddprun::launcher {
namespace {

LaunchConfig parse(std::vector<std::string> args,
                   std::optional<std::string> cuda_visible_devices = std::nullopt) {
  args.insert(args.begin(), "ddprun");
  std::vector<const char*> argv;
  for (auto& a : args) argv.push_back(a.c_str());
  EnvLookup env = [&](const std::string& name) -> std::optional<std::string> {
    return name == "CUDA_VISIBLE_DEVICES" ? cuda_visible_devices : std::nullopt;
  };
  return parse_command_line(static_cast<int>(argv.size()), argv.data(), env,
                            DeviceCounter{[] { return 4; }, [] { return 0; }, [] { return 0; }});
}

TEST(PreflightFlags, EveryCheckByDefaultWhereTheJobWrites) {
  auto c = parse({"--nproc_per_node=3", "--log_dir=/l", "--tracking_dir=/t", "x.py"});
  const auto& p = c.agent.preflight;
  EXPECT_EQ(p.checks.size(), 6u);
  EXPECT_FALSE(p.visible_gpus) << "every GPU";
  EXPECT_EQ(p.write_dirs, (std::vector<std::string>{"/l", "/t"}));
  EXPECT_EQ(p.local_workers, 3);
  EXPECT_TRUE(p.health_command.empty());
  EXPECT_TRUE(parse({"--no_tracking", "x.py"}).agent.preflight.write_dirs.empty());
}

TEST(PreflightFlags, NamedChecksAddToTheDefaultsNoneStartsFromNothing) {
  using agent::Check;
  auto some = parse({"--preflight=none,shm,disk", "--health_check=dcgmi diag -r 1",
                     "--health_check_timeout=90", "x.py"});
  EXPECT_EQ(some.agent.preflight.checks, (std::vector<Check>{Check::kShm, Check::kDisk}));
  EXPECT_EQ(some.agent.preflight.health_command, "dcgmi diag -r 1");
  EXPECT_EQ(some.agent.preflight.health_timeout, std::chrono::seconds(90));
  EXPECT_TRUE(parse({"--preflight=none", "x.py"}).agent.preflight.checks.empty());
  EXPECT_EQ(parse({"--preflight=shm,disk", "x.py"}).agent.preflight.checks.size(), 6u)
      << "already among the defaults";
  auto without_shm = parse({"--preflight=-shm", "x.py"}).agent.preflight.checks;
  EXPECT_EQ(without_shm.size(), 5u);
  EXPECT_EQ(std::count(without_shm.begin(), without_shm.end(), Check::kShm), 0);
}

TEST(PreflightFlags, TheLinkProbeIsAskedForByName) {
  auto by_default = parse({"x.py"}).agent.preflight.checks;
  EXPECT_EQ(std::count(by_default.begin(), by_default.end(), agent::Check::kLink), 0)
      << "not by default";
  auto with = parse({"--preflight=all,link", "x.py"}).agent.preflight.checks;
  EXPECT_EQ(with.size(), 7u);
  EXPECT_EQ(with.back(), agent::Check::kLink);
  auto link = parse(
      {"--nnodes=2:3", "--rdzv_backend=c10d", "--rdzv_endpoint=h:1", "--preflight=link", "x.py"});
  EXPECT_EQ(link.agent.preflight.checks, with) << "the defaults stay";
  for (const auto& notice : link.notices) {
    EXPECT_EQ(notice.find("--preflight"), std::string::npos) << notice;
  }
  EXPECT_EQ(parse({"--preflight=none,link", "x.py"}).agent.preflight.checks,
            std::vector<agent::Check>{agent::Check::kLink});
}

TEST(PreflightFlags, ALinkCheckOnOneNodeIsSaidToBeSkipped) {
  auto one = parse({"--preflight=link", "x.py"});
  ASSERT_EQ(one.notices.size(), 1u);
  EXPECT_NE(one.notices[0].find("--preflight=link: the link check probes between nodes"),
            std::string::npos)
      << one.notices[0];
}

TEST(PreflightFlags, TheVisibleGpusAreTheOnesChecked) {
  EXPECT_EQ(parse({"x.py"}, "2,3").agent.preflight.visible_gpus, (std::vector<int>{2, 3}));
  EXPECT_EQ(parse({"x.py"}, "").agent.preflight.visible_gpus, std::vector<int>{}) << "none";
  EXPECT_FALSE(parse({"x.py"}, "GPU-1a2b,GPU-3c4d").agent.preflight.visible_gpus)
      << "UUIDs: every GPU";
}

TEST(PreflightFlags, BadValuesNameTheFlag) {
  for (auto bad : {"--preflight=gpus", "--preflight=", "--preflight=disk,,shm", "--preflight=-",
                   "--preflight=none,disks", "--preflight=disk,"}) {
    try {
      parse({bad, "x.py"});
      ADD_FAILURE() << bad << " was taken";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--preflight"), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find("'none' is"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(parse({"--health_check_timeout=0", "x.py"}), UsageError);
  EXPECT_THROW(parse({"--health_check_timeout=soon", "x.py"}), UsageError);
}

}  // namespace
}  // namespace ddprun::launcher
