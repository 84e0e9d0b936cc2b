#include "os/process_probe.h"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace ddprun::os {
namespace {

std::string proc_file(pid_t pid, const char* name) {
  return "/proc/" + std::to_string(pid) + "/" + name;
}

std::string on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path && *path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

}  // namespace

bool catches_signal(pid_t pid, int sig) {
  std::ifstream status(proc_file(pid, "status"));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("SigCgt:", 0) != 0) continue;
    uint64_t mask = std::strtoull(line.c_str() + 7, nullptr, 16);
    return sig >= 1 && sig <= 64 && (mask >> (sig - 1) & 1U) != 0;
  }
  return false;
}

std::string wait_channel(pid_t pid) {
  std::ifstream in(proc_file(pid, "wchan"));
  std::string channel;
  std::getline(in, channel);
  return channel == "0" ? "" : channel;
}

std::vector<std::string> native_stack_command(pid_t pid) {
  std::string id = std::to_string(pid);
  if (std::string eu = on_path("eu-stack"); !eu.empty()) return {eu, "-p", id};
  if (std::string gdb = on_path("gdb"); !gdb.empty()) {
    return {gdb, "-batch", "-nx", "-p", id, "-ex", "thread apply all bt"};
  }
  return {};
}

}  // namespace ddprun::os
