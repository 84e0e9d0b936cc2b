// libFuzzer target for the command line: any arguments and PET_*/SLURM_* environment
// are either parsed or refused with one UsageError; nothing else escapes. The input's
// lines are the arguments; lines of the form "=NAME=value" set environment variables.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "launcher/cli.h"

using namespace ddprun;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // token_file=- reads standard input: it must end at once, not wait for a terminal.
  if (!std::freopen("/dev/null", "r", stdin)) return 1;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream lines(std::string(reinterpret_cast<const char*>(data), size));
  std::vector<std::string> args{"ddprun"};
  std::map<std::string, std::string> env;
  for (std::string line; std::getline(lines, line) && args.size() < 64;) {
    if (line.size() > 1 && line[0] == '=') {
      size_t eq = line.find('=', 1);
      if (eq != std::string::npos) env[line.substr(1, eq - 1)] = line.substr(eq + 1);
    } else {
      args.push_back(line);
    }
  }
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  argv.push_back(nullptr);
  launcher::EnvLookup lookup = [&env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  launcher::DeviceCounter devices{[] { return 2; }, [] { return 2; }, [] { return 0; }};
  // Names resolve as they are: no network, no scontrol.
  launcher::NodeAddressLookup no_network =
      [](const std::string&) -> std::optional<launcher::NodeAddress> { return std::nullopt; };
  try {
    (void)launcher::parse_command_line(static_cast<int>(args.size()), argv.data(), lookup,
                                       devices, no_network);
  } catch (const UsageError&) {
  }
  return 0;
}
