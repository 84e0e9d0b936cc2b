#include "agent/executable.h"
#include "tests/helpers/scratch.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <unistd.h>

#include <fstream>

namespace ddprun::agent {
namespace {

int exit_code_of(const std::string& name) {
  try {
    resolve_executable(name);
  } catch (const ExecError& e) {
    return e.exit_code();
  }
  return 0;
}

TEST(ResolveExecutable, SearchesPath) {
  EXPECT_EQ(resolve_executable("sh").substr(resolve_executable("sh").size() - 3), "/sh");
  EXPECT_EQ(resolve_executable("/bin/sh"), "/bin/sh");
}

std::string plain_file() {
  std::string path = test::scratch_file("ddprun_plain_");
  chmod(path.c_str(), 0644);
  return path;
}

TEST(ResolveExecutable, MissingIs127AndNotExecutableIs126) {
  EXPECT_EQ(exit_code_of("definitely-not-a-program-xyz"), 127);
  EXPECT_EQ(exit_code_of("/nonexistent/prog"), 127);
  EXPECT_EQ(exit_code_of(plain_file()), 126);
  EXPECT_EQ(exit_code_of("/tmp"), 126);
  EXPECT_EQ(exit_code_of(""), 127);
}

TEST(CheckReadableFile, Cases) {
  EXPECT_NO_THROW(check_readable_file(plain_file()));
  EXPECT_THROW(check_readable_file("/nonexistent.py"), ExecError);
  EXPECT_THROW(check_readable_file("/tmp"), ExecError);
}

}  // namespace
}  // namespace ddprun::agent
