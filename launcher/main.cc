// ddprun: a native, torchrun-compatible launcher for distributed training.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <random>

#include <spdlog/spdlog.h>

#include "agent/device_count.h"
#include "agent/executable.h"
#include "agent/local_agent.h"
#include "agent/orphan_guard.h"
#include "agent/process_launcher.h"
#include "common/error.h"
#include "common/logging.h"
#include "launcher/cli.h"
#include "launcher/entrypoint.h"

namespace {

using namespace ddprun;

constexpr int kUsageExit = 2;

std::optional<std::string> real_env(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  return v ? std::optional<std::string>(v) : std::nullopt;
}

std::string random_uuid() {
  std::random_device rd;
  std::uniform_int_distribution<int> hex(0, 15);
  const char* digits = "0123456789abcdef";
  std::string out;
  for (char c : std::string("xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx")) {
    if (c == 'x')
      out += digits[hex(rd)];
    else if (c == 'y')
      out += digits[8 + hex(rd) % 4];
    else
      out += c;
  }
  return out;
}

void print_omp_banner(const std::string& threads) {
  std::cerr << "*****************************************\n"
               "ddprun: OMP_NUM_THREADS is not set; each worker gets OMP_NUM_THREADS="
            << threads
            << " so that the workers do not oversubscribe the CPUs. Set it yourself to tune "
               "performance.\n"
               "*****************************************\n";
}

int launch(launcher::LaunchConfig& cfg) {
  setup_logging(cfg.log_level);
  launcher::resolve_entrypoint(cfg, real_env);
  if (cfg.agent.standalone) cfg.agent.run_id = random_uuid();
  if (!cfg.agent.omp_num_threads.empty()) print_omp_banner(cfg.agent.omp_num_threads);
  // A closed console must not kill the agent; writes to it fail with EPIPE instead.
  ::signal(SIGPIPE, SIG_IGN);
  agent::OrphanGuard guard;
  agent::PosixProcessLauncher process_launcher;
  agent::LocalAgent local_agent(cfg.agent, process_launcher, &guard);
  return local_agent.run();
}

}  // namespace

int main(int argc, char** argv) {
  launcher::LaunchConfig cfg;
  try {
    launcher::DeviceCounter devices{agent::count_cpus, agent::count_visible_gpus};
    cfg = launcher::parse_command_line(argc, argv, real_env, devices);
    if (cfg.help) {
      std::cout << launcher::help_text();
      return 0;
    }
    if (cfg.version) {
      std::cout << "ddprun " << DDPRUN_VERSION << "\n";
      return 0;
    }
    return launch(cfg);
  } catch (const UsageError& e) {
    std::cerr << "ddprun: error: " << e.what() << "\n";
    return kUsageExit;
  } catch (const agent::ExecError& e) {
    std::cerr << "ddprun: error: cannot run the training script: " << e.what() << "\n";
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cerr << "ddprun: error: " << e.what() << "\n";
    return 1;
  }
}
