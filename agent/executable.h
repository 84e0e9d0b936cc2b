#pragma once

#include <string>

#include "common/error.h"

namespace ddprun::agent {

/// A program that cannot be run. exit_code() is the shell's convention:
/// 127 when it does not exist, 126 when it exists but cannot be executed.
class ExecError : public Error {
 public:
  ExecError(const std::string& what, int exit_code) : Error(what), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

/// Resolves `name` like execvp: a name with a '/' is used as is, otherwise each
/// directory of PATH is searched. Returns the path to execute; throws ExecError.
std::string resolve_executable(const std::string& name);

/// Checks that a script file exists and is readable; throws ExecError (127/126).
void check_readable_file(const std::string& path);

}  // namespace ddprun::agent
