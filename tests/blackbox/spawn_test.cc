// What a worker inherits from ddprun: its standard streams, nothing else.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "tests/blackbox/ddprun_process.h"

namespace ddprun::test {
namespace {

std::vector<std::string> fd_lines(const Finished& f) {
  std::vector<std::string> out;
  for (int lr = 0; lr < 2; ++lr) {
    for (const auto& line : lines_starting_with(f.out, "[default" + std::to_string(lr) + "]:fds")) {
      out.push_back(line);
    }
  }
  return out;
}

TEST(Spawn, WorkersHoldOnlyDescriptorsZeroOneAndTwo) {
  // The job's store listens in ddprun meanwhile and every worker's output has a pipe.
  Finished f =
      run_ddprun({"--nproc_per_node=2", "--tee=3", "--no_python", test_worker_binary(), "fds"});
  ASSERT_EQ(f.code, 0) << f.err;
  EXPECT_EQ(fd_lines(f), (std::vector<std::string>{"[default0]:fds 0 1 2", "[default1]:fds 0 1 2"}))
      << f.out;
}

TEST(Spawn, DescriptorsDdprunInheritedStayWithDdprun) {
  // Not close-on-exec: ddprun itself inherits these.
  int a = ::open("/dev/null", O_RDONLY);
  int b = ::dup2(a, 9);
  ASSERT_GE(a, 3);
  ASSERT_EQ(b, 9);
  Finished f =
      run_ddprun({"--nproc_per_node=2", "--tee=3", "--no_python", test_worker_binary(), "fds"});
  ::close(a);
  ::close(b);
  ASSERT_EQ(f.code, 0) << f.err;
  EXPECT_EQ(fd_lines(f), (std::vector<std::string>{"[default0]:fds 0 1 2", "[default1]:fds 0 1 2"}))
      << f.out;
}

}  // namespace
}  // namespace ddprun::test
