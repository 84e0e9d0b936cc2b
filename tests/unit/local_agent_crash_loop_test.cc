// LocalAgent and crash loops, driven through fakes: restarts that get no further than
// the last one end the job (--max_no_progress_restarts).
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "tests/unit/local_agent_fixture.h"

namespace ddprun::testing {
namespace {

// A crash loop: every attempt resumes, fails at step 25 again; after
// --max_no_progress_restarts such restarts the job stops with its exit code instead of
// using up --max_restarts.
TEST_F(LocalAgentTest, RestartsThatFailWhereTheLastOneDidEndTheJob) {
  config_.spec.max_restarts = 10;
  config_.hang.max_no_progress_restarts = 3;
  launcher_.on_spawn = [&](const auto& p) {
    int fd = ::open(p.env("DDPRUN_PROGRESS_FILE").c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    int64_t step = 25;
    uint64_t timed = 5;
    ASSERT_EQ(::pwrite(fd, &step, sizeof(step), 16), 8);
    ASSERT_EQ(::pwrite(fd, &timed, sizeof(timed), 96), 8);
    ::close(fd);
    if (p.rank() == 1) launcher_.exit(p.pid, 1);
  };
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run(), agent::kNoProgressExitCode);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(journal_->restarts, 3);  // attempts 1, 2 and 3 got no further than 0
  EXPECT_NE(err.find("3 restart(s) in a row got no rank past step 25 (--max_no_progress_restarts)"),
            std::string::npos)
      << err;
}

}  // namespace
}  // namespace ddprun::testing
