#include "agent/executable.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

namespace ddprun::agent {
namespace {

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

void check_executable(const std::string& name, const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw ExecError("'" + name + "' not found", 127);
  }
  if (!S_ISREG(st.st_mode) || ::access(path.c_str(), X_OK) != 0) {
    throw ExecError("'" + path + "' is not executable", 126);
  }
}

}  // namespace

std::string resolve_executable(const std::string& name) {
  if (name.empty()) throw ExecError("an empty program name cannot be executed", 127);
  if (name.find('/') != std::string::npos) {
    check_executable(name, name);
    return name;
  }
  const char* path_env = std::getenv("PATH");
  std::stringstream dirs(path_env ? path_env : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  std::string found_not_executable;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (!is_regular_file(candidate)) continue;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (found_not_executable.empty()) found_not_executable = candidate;
  }
  if (!found_not_executable.empty()) {
    throw ExecError("'" + found_not_executable + "' is not executable", 126);
  }
  throw ExecError("'" + name + "' not found in PATH", 127);
}

void check_readable_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw ExecError("'" + path + "' not found", 127);
  if (S_ISDIR(st.st_mode) || ::access(path.c_str(), R_OK) != 0) {
    throw ExecError("'" + path + "' cannot be read", 126);
  }
}

}  // namespace ddprun::agent
