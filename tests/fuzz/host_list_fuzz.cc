// libFuzzer target for host lists: Slurm's node lists (SLURM_STEP_NODELIST), hostfiles,
// --hosts and --include/--exclude. Any text is either read or refused with one
// UsageError naming where it came from; nothing else escapes. The input's first five
// lines feed the five parsers (a hostfile's newlines are written as '|').
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "common/error.h"
#include "common/host_list.h"
#include "launcher/hostfile.h"

using namespace ddprun;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream lines(std::string(reinterpret_cast<const char*>(data), size));
  std::string field[5];
  for (auto& f : field) std::getline(lines, f);
  std::replace(field[1].begin(), field[1].end(), '|', '\n');
  try {
    auto names = expand_host_list("SLURM_STEP_NODELIST", field[0]);
    if (names.empty()) __builtin_trap();
  } catch (const UsageError&) {
  }
  try {
    auto hosts = launcher::parse_hostfile("hosts", field[1]);
    (void)launcher::filter_hosts(hosts, field[3], field[4]);
  } catch (const UsageError&) {
  }
  try {
    auto hosts = launcher::parse_host_list("--hosts", field[2]);
    (void)launcher::filter_hosts(hosts, field[3], field[4]);
  } catch (const UsageError&) {
  }
  return 0;
}
