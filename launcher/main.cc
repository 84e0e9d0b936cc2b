// ddprun: a native, torchrun-compatible launcher for distributed training.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include <spdlog/spdlog.h>

#include "agent/device_count.h"
#include "agent/executable.h"
#include "agent/local_agent.h"
#include "agent/numa_binding.h"
#include "agent/orphan_guard.h"
#include "agent/hang/posix_process_inspector.h"
#include "agent/posix_process_launcher.h"
#include "common/build_info.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/host.h"
#include "common/logging.h"
#include "launcher/cli.h"
#include "launcher/completion.h"
#include "launcher/manual.h"
#include "launcher/launch_resolve.h"
#include "launcher/runs_command.h"
#include "launcher/ssh_controller.h"
#include "rendezvous/rendezvous_factory.h"
#include "tracking/console_event_log.h"
#include "tracking/run_summary.h"
#include "tracking/run_tracker.h"

namespace {

using namespace ddprun;

constexpr int kUsageExit = 2;

std::optional<std::string> real_env(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  return v ? std::optional<std::string>(v) : std::nullopt;
}

// A run id for the tracking run: the rendezvous id when there is one, else a fresh one.
std::string tracking_run_id(const launcher::LaunchConfig& cfg) {
  if (cfg.agent.run_id != "none") return cfg.agent.run_id;
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "run-%Y%m%d-%H%M%S", &tm);
  return std::string(buf) + "-" + std::to_string(::getpid());
}

std::unique_ptr<tracking::RunTracker> make_tracker(const launcher::LaunchConfig& cfg, int argc,
                                                   char** argv) {
  if (!cfg.tracking) return nullptr;
  tracking::RunTracker::Options o;
  o.tracking_dir = cfg.tracking_dir;
  o.run_id = tracking_run_id(cfg);
  o.multi_node = cfg.agent.max_nodes > 1;
  o.token = cfg.rendezvous.token;
  o.listen_all = cfg.rendezvous.listen_all;
  o.run_name = cfg.run_name;
  o.command_json = nlohmann::json(std::vector<std::string>(argv, argv + argc)).dump();
  nlohmann::json config{
      {"nproc_per_node", cfg.agent.spec.local_world_size},
      {"nnodes", std::to_string(cfg.agent.min_nodes) + ":" + std::to_string(cfg.agent.max_nodes)},
      {"rdzv_backend", rendezvous::backend_name(cfg.rendezvous.backend)},
      {"max_restarts", cfg.agent.spec.max_restarts},
      {"entrypoint", cfg.agent.spec.argv}};
  if (!cfg.agent.cpu_bindings.empty()) {
    // This node's bindings (every node plans its own; the run keeps the primary's).
    nlohmann::json bindings = nlohmann::json::array();
    for (const auto& b : cfg.agent.cpu_bindings) bindings.push_back(b.describe());
    config["numa_binding"] = {{"mode", agent::numa_mode_name(cfg.agent.numa_mode)},
                              {"local_ranks", bindings}};
  }
  o.config_json = config.dump();
  o.system_interval = cfg.tracking_interval;
  // A Python worker takes tens of milliseconds just to start its interpreter: each of
  // its attempts is sampled.
  if (cfg.kind != launcher::ScriptKind::kExecutable) o.unsampled_exit = {};
  return std::make_unique<tracking::RunTracker>(o);
}

int launch(launcher::LaunchConfig& cfg, int argc, char** argv) {
  setup_logging(cfg.log_level);
  // Warnings about the command line, with the same prefix as every other warning.
  for (const auto& notice : cfg.notices) spdlog::warn("{}", notice);
  std::vector<std::string> notices;
  launcher::resolve_launch(cfg, real_env, notices);
  for (const auto& notice : notices) spdlog::warn("{}", notice);
  // Before the threads: where the guard is a fork (old kernels), a small one.
  agent::OrphanGuard guard;
  guard.stay_until_exit();  // and so ddprun's exit is quicker
  // Before any worker starts: an unwritable tracking directory fails the launch here.
  // Its thread makes the run meanwhile.
  auto tracker = make_tracker(cfg, argc, argv);
  // A closed console must not kill the agent; writes to it fail with EPIPE instead.
  ::signal(SIGPIPE, SIG_IGN);
  boost::asio::io_context io;
  agent::PosixProcessLauncher process_launcher(io);
  SteadyClock clock(io);
  agent::PosixProcessInspector inspector(io, process_launcher, clock);
  tracking::RunObserver* observer = tracker.get();
  std::unique_ptr<tracking::ConsoleEventLog> console_events;
  if (cfg.console_events) {
    console_events = std::make_unique<tracking::ConsoleEventLog>(observer, std::cerr, host_name());
    observer = console_events.get();
  }
  agent::AgentServices services{
      io,
      process_launcher,
      clock,
      [&cfg](CancelSignal& cancel) { return rendezvous::open_rendezvous(cfg.rendezvous, cancel); },
      &guard,
      observer,
      &inspector,
      /*signals=*/nullptr,
      /*probe=*/nullptr,
      [&cfg](std::string reason, CancelSignal& cancel) {
        return rendezvous::tell_unfit(cfg.rendezvous, std::move(reason), cancel);
      }};
  agent::LocalAgent local_agent(cfg.agent, std::move(services));
  int code = local_agent.run();
  std::string run_dir = tracker ? tracker->primary_run_dir() : "";
  // The run is completed, and its thread ends, while the agent's own (the store's, told
  // to stop as the job ended) wind down: each would take a few hundred microseconds to
  // wake for a join on an idle CPU of a VM. The agent, done, no longer tells the
  // observer anything.
  console_events.reset();
  tracker.reset();
  // A job that ended badly says, after its failure summary, where its time went.
  if (code != 0 && !run_dir.empty()) {
    if (auto goodput = tracking::ended_run_goodput(run_dir)) {
      std::cerr << "ddprun: " << tracking::describe_goodput(*goodput) << "\n";
    }
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "runs") return launcher::runs_command(argc, argv);
  if (argc > 1 && std::string(argv[1]) == "reference") {
    std::string kind = argc > 2 ? argv[2] : "";
    if (kind == "man") {
      std::cout << launcher::man_page();
    } else if (kind == "markdown") {
      std::cout << launcher::flag_reference_markdown();
    } else {
      std::cerr << "usage: ddprun reference man|markdown  (the manual page, or docs/flags.md)\n";
      return kind == "--help" || kind == "-h" ? 0 : 2;
    }
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "completion") {
    std::string shell = argc > 2 ? argv[2] : "";
    if (shell == "--help" || shell == "-h") {
      std::cout << "usage: ddprun completion bash|zsh|tcsh\n\n"
                   "Prints ddprun's completion script for the shell: flags, their values, and\n"
                   "the verbs of `ddprun runs`. E.g. `source <(ddprun completion bash)`, or\n"
                   "install it where the shell loads completions (the .deb does).\n";
      return 0;
    }
    try {
      std::cout << launcher::completion_script(argc > 2 ? argv[2] : "");
      return 0;
    } catch (const UsageError& e) {
      std::cerr << "ddprun: error: " << e.what() << "\n";
      return 2;
    }
  }
  launcher::LaunchConfig cfg;
  try {
    launcher::DeviceCounter devices{agent::count_cpus, agent::count_visible_gpus,
                                    agent::count_xpus};
    cfg = launcher::parse_command_line(argc, argv, real_env, devices);
    if (cfg.help) {
      std::cout << launcher::help_text();
      return 0;
    }
    if (cfg.print_completion) {
      std::cout << launcher::completion_script(*cfg.print_completion);
      return 0;
    }
    if (cfg.version) {
      std::cout << "ddprun " << DDPRUN_VERSION << " (commit " << build_commit() << ", "
                << (portable_build() ? "portable: everything but glibc linked in"
                                     : "dynamically linked")
                << ")\n";
      return 0;
    }
    if (cfg.ssh) {
      setup_logging(cfg.log_level);
      launcher::prepare_ssh_job(*cfg.ssh);
      return launcher::run_ssh_job(*cfg.ssh);
    }
    return launch(cfg, argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "ddprun: error: " << e.what() << "\n";
    return kUsageExit;
  } catch (const agent::ExecError& e) {
    std::cerr << "ddprun: error: " << e.what() << "\n";
    return e.exit_code();
  } catch (const ListenError& e) {
    std::cerr << "ddprun: error: " << e.what() << "\n";
    if (!cfg.port_hint.empty()) std::cerr << "ddprun: " << cfg.port_hint << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "ddprun: error: " << e.what() << "\n";
    return 1;
  }
}
