#include "os/process_probe.h"

#include <cstdint>
#include <fstream>

namespace ddprun::os {
namespace {

std::string proc_file(pid_t pid, const char* name) {
  return "/proc/" + std::to_string(pid) + "/" + name;
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

std::string process_name(pid_t pid) {
  std::ifstream in(proc_file(pid, "comm"));
  std::string name;
  std::getline(in, name);
  return name;
}

}  // namespace ddprun::os
