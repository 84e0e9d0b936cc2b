// torchrun's worker watchdog on a real FIFO with time moved by hand: deadlines,
// releases, torchrun's choice among expired scopes, and what ddprun refuses.
#include "agent/hang/timer_watchdog.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tests/fakes/manual_clock.h"

namespace ddprun::agent {
namespace {

using std::chrono::milliseconds;

class TimerWatchdogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ddprun_watchdog_XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = dir_ + "/timer";
    watchdog_ = std::make_unique<TimerWatchdog>(io_, clock_, path_, [this] { return wall_; });
    watchdog_->start(
        [](pid_t pid) -> std::optional<int> {
          if (pid == 100) return 0;
          if (pid == 101) return 1;
          return std::nullopt;  // not a worker's
        },
        [this](const TimerWatchdog::Expiry& e) { expired_.push_back(e); });
  }
  void TearDown() override {
    watchdog_.reset();
    std::filesystem::remove_all(dir_);
  }

  // What FileTimerClient does: open without blocking, write one line, close.
  void request(pid_t pid, const std::string& scope, double expiration, int sig) {
    write_line("{\"version\": 1, \"pid\": " + std::to_string(pid) + ", \"scope_id\": \"" + scope +
               "\", \"expiration_time\": " + std::to_string(expiration) +
               ", \"signal\": " + std::to_string(sig) + "}");
  }
  void write_line(const std::string& line) {
    int fd = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK);
    ASSERT_GE(fd, 0) << "the watchdog holds the FIFO open for reading";
    std::string text = line + "\n";
    ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::close(fd);
    io_.restart();
    io_.run_for(milliseconds(50));  // the loop reads what was written
  }

  boost::asio::io_context io_;
  testing::ManualClock clock_;
  double wall_ = 1000.0;  // the workers' wall clock
  std::string dir_;
  std::string path_;
  std::unique_ptr<TimerWatchdog> watchdog_;
  std::vector<TimerWatchdog::Expiry> expired_;
};

TEST_F(TimerWatchdogTest, TheFifoIsTheUsersAloneAndGoesWithTheWatchdog) {
  struct stat st {};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  watchdog_.reset();
  EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_F(TimerWatchdogTest, AnExpiredTimerSignalsTheProcessThatSetIt) {
  request(101, "train.py#12", wall_ + 1.0, SIGKILL);
  EXPECT_EQ(watchdog_->timers(), 1u);
  clock_.advance(milliseconds(999));
  EXPECT_TRUE(expired_.empty());
  clock_.advance(milliseconds(1));
  ASSERT_EQ(expired_.size(), 1u);
  EXPECT_EQ(expired_[0].pid, 101);
  EXPECT_EQ(expired_[0].local_rank, 1);
  EXPECT_EQ(expired_[0].scope, "train.py#12");
  EXPECT_EQ(expired_[0].signal, SIGKILL);
  EXPECT_DOUBLE_EQ(expired_[0].length_seconds, 1.0);
  EXPECT_EQ(watchdog_->timers(), 0u) << "the pid's timers are forgotten once it is signalled";
}

// torch's requests carry wall-clock expiries; each becomes a steady deadline when it
// arrives, so a jump of the wall clock afterwards (NTP stepping it, an admin setting
// it) neither reaps a worker early nor keeps one past its time.
TEST_F(TimerWatchdogTest, AWallClockJumpAfterARequestMovesNoDeadline) {
  request(101, "forward", wall_ + 10.0, SIGKILL);
  request(100, "back", wall_ + 10.0, SIGKILL);
  wall_ += 3600;  // an hour forward: both would be long overdue by the wall clock
  clock_.advance(milliseconds(9999));
  EXPECT_TRUE(expired_.empty());
  wall_ -= 7200;  // an hour back from the start: both would be an hour away
  clock_.advance(milliseconds(1));
  ASSERT_EQ(expired_.size(), 2u);
}

TEST_F(TimerWatchdogTest, AReleasedScopeNeverFires) {
  request(100, "step", wall_ + 1.0, SIGKILL);
  request(100, "step", -1, SIGKILL);  // expiration_time -1: released
  clock_.advance(milliseconds(5000));
  EXPECT_TRUE(expired_.empty());
  EXPECT_EQ(watchdog_->timers(), 0u);
}

TEST_F(TimerWatchdogTest, TheEarliestExpiredScopeWithASignalIsUsed) {
  request(100, "no-signal", wall_ + 0.5, 0);
  request(100, "first", wall_ + 1.0, SIGTERM);
  request(100, "second", wall_ + 1.5, SIGKILL);
  clock_.advance(milliseconds(2000));
  ASSERT_EQ(expired_.size(), 1u) << "one signal per process";
  EXPECT_EQ(expired_[0].scope, "first");
  EXPECT_EQ(expired_[0].signal, SIGTERM);
}

TEST_F(TimerWatchdogTest, AScopeWithoutASignalIsDroppedNotFired) {
  request(100, "quiet", wall_ + 0.5, 0);
  clock_.advance(milliseconds(1000));
  EXPECT_TRUE(expired_.empty());
  EXPECT_EQ(watchdog_->timers(), 0u);
}

TEST_F(TimerWatchdogTest, OnlyThisNodesWorkersMaySetTimers) {
  request(1, "init", wall_ + 0.1, SIGKILL);  // any other process, e.g. init
  EXPECT_EQ(watchdog_->timers(), 0u);
  clock_.advance(milliseconds(1000));
  EXPECT_TRUE(expired_.empty());
}

TEST_F(TimerWatchdogTest, MalformedLinesAreSkippedAndLaterRequestsStillServed) {
  for (const char* junk : {"not json", "[1,2]", R"({"pid": "x", "scope_id": "s"})",
                           R"({"pid": 100, "scope_id": "s", "expiration_time": 1, "signal": 999})",
                           R"({"pid": -5, "scope_id": "s", "expiration_time": 1, "signal": 9})"}) {
    write_line(junk);
  }
  EXPECT_EQ(watchdog_->timers(), 0u);
  request(100, "ok", wall_ + 0.1, SIGKILL);
  clock_.advance(milliseconds(200));
  EXPECT_EQ(expired_.size(), 1u);
}

TEST_F(TimerWatchdogTest, AnOverdueRequestFiresAtOnceAndStopForgetsEverything) {
  request(100, "late", wall_ - 3.0, SIGKILL);  // already past when it arrives
  clock_.advance(milliseconds(0));
  ASSERT_EQ(expired_.size(), 1u);
  EXPECT_NEAR(expired_[0].overdue_seconds, 3.0, 0.01);
  request(101, "pending", wall_ + 1.0, SIGKILL);
  watchdog_->stop();  // the attempt ended
  EXPECT_EQ(watchdog_->timers(), 0u);
  request(101, "between attempts", wall_ + 1.0, SIGKILL);
  clock_.advance(milliseconds(5000));
  EXPECT_EQ(expired_.size(), 1u) << "nothing is watched between attempts";
}

}  // namespace
}  // namespace ddprun::agent
