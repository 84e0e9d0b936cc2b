// PeriodicThread: ticks at once or after its interval, ends when a tick says so, and
// stop() wakes it from a long pause at once.
#include "common/periodic_thread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>

namespace ddprun {
namespace {

using namespace std::chrono_literals;

TEST(PeriodicThread, StopWakesItFromAPauseOfAnHour) {
  std::promise<void> ticked;
  std::atomic<int> ticks{0};
  PeriodicThread t("ddprun-test", 1h, PeriodicThread::First::kAtOnce, [&](const PeriodicThread&) {
    if (ticks++ == 0) ticked.set_value();
    return true;
  });
  ticked.get_future().wait();
  bool interrupted = false;
  t.stop([&] { interrupted = true; });  // returns now, not in an hour
  EXPECT_TRUE(interrupted);
  EXPECT_TRUE(t.stopping());
  EXPECT_EQ(ticks, 1);
  t.stop();  // again: nothing left to do
}

TEST(PeriodicThread, AfterIntervalDoesNothingWhenStoppedFirst) {
  std::atomic<int> ticks{0};
  {
    PeriodicThread t("ddprun-test", 1h, PeriodicThread::First::kAfterInterval,
                     [&](const PeriodicThread&) {
                       ++ticks;
                       return true;
                     });
  }
  EXPECT_EQ(ticks, 0);
}

TEST(PeriodicThread, ATickThatSaysNoEndsTheThread) {
  std::atomic<int> ticks{0};
  std::promise<void> done;
  PeriodicThread t("ddprun-test", 1ms, PeriodicThread::First::kAtOnce, [&](const PeriodicThread&) {
    if (++ticks == 3) {
      done.set_value();
      return false;
    }
    return true;
  });
  done.get_future().wait();
  t.stop();
  EXPECT_EQ(ticks, 3);
}

}  // namespace
}  // namespace ddprun
