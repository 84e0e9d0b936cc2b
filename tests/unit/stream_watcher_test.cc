// The stream thread: a final pass always sees what was written before it was asked
// for, however it races with passes the writes themselves set off.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/helpers/scratch.h"
#include "tests/helpers/threads.h"
#include "tracking/stream_watcher.h"

namespace ddprun::tracking {
namespace {

TEST(StreamWatcher, EveryFinalPassSeesEveryEarlierWrite) {
  std::string dir = test::scratch_dir("ddprun_watch_");
  std::string file = dir + "/s.jsonl";
  std::atomic<int64_t> seen_by_final{0};
  StreamWatcher watcher(dir, std::chrono::seconds(60), [&](bool final) {
    if (final) seen_by_final = static_cast<int64_t>(std::filesystem::file_size(file));
  });
  for (int i = 1; i <= 50; ++i) {
    std::ofstream(file, std::ios::app) << "x\n";  // sets off a pass of its own
    watcher.final_pass();
    ASSERT_EQ(seen_by_final.load(), 2 * i) << "final pass " << i << " missed a write";
  }
}

// The tracker asks for its last pass and leaves it to the thread; the destructor's stop
// comes right after and must not cut it.
TEST(StreamWatcher, AFinalPassAskedForRunsBeforeTheStop) {
  std::string dir = test::scratch_dir("ddprun_watch_");
  for (int i = 0; i < 50; ++i) {
    int finals = 0;
    {
      StreamWatcher watcher(dir, std::chrono::seconds(60), [&](bool final) { finals += final; });
      watcher.request_final();
    }
    ASSERT_EQ(finals, 1) << "round " << i;
  }
  std::filesystem::remove_all(dir);
}

// The job's end: told to stop soon, the thread ends on its own (nothing has to wake it
// for a join) and the last pass is the caller's, on its thread; a final pass asked for
// after that runs in the destructor.
TEST(StreamWatcher, StoppedSoonTheThreadEndsOnItsOwnAndTheCallerPassesLast) {
  std::string dir = test::scratch_dir("ddprun_watch_");
  const auto caller = std::this_thread::get_id();
  std::atomic<int> finals_here{0};
  std::atomic<int> finals_elsewhere{0};
  int before = test::thread_count();
  {
    StreamWatcher watcher(dir, std::chrono::hours(1), [&](bool final) {
      if (final) ++(std::this_thread::get_id() == caller ? finals_here : finals_elsewhere);
    });
    ASSERT_EQ(test::thread_count(), before + 1);
    watcher.stop_soon();
    EXPECT_EQ(test::await_thread_count(before), before) << "the thread waited to be joined";
    watcher.finish_here();
    EXPECT_EQ(finals_here + finals_elsewhere, 1);
    EXPECT_EQ(finals_here, 1);
    watcher.request_final();
  }
  EXPECT_EQ(finals_here + finals_elsewhere, 2)
      << "a final pass asked for after the end was dropped";
  EXPECT_EQ(finals_elsewhere, 0);
  std::filesystem::remove_all(dir);
}

TEST(StreamWatcher, WritesAreTakenWithoutWaitingForTheInterval) {
  std::string dir = test::scratch_dir("ddprun_watch_");
  std::atomic<int> passes{0};
  // Watching from the start: no early polls either.
  StreamWatcher watcher(
      dir, std::chrono::hours(1), [&](bool) { ++passes; }, std::chrono::milliseconds(0));
  std::ofstream(dir + "/s.jsonl") << "x\n";
  // No timing in the assertion: an hour-long interval cannot be what wakes it.
  while (passes == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  SUCCEED();
}

int inotify_instances() {
  int n = 0;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    n += std::filesystem::read_symlink(fd.path(), ec).string() == "anon_inode:inotify";
  }
  return n;
}

// Closing an inotify instance costs a kernel grace period: a job of a few milliseconds
// is watched by early polls alone and never pays it at its exit.
TEST(StreamWatcher, AShortJobsWritesAreTakenWithoutAnInotifyInstance) {
  std::string dir = test::scratch_dir("ddprun_watch_");
  std::string file = dir + "/s.jsonl";
  std::atomic<int64_t> seen{0};
  int before = inotify_instances();
  StreamWatcher watcher(
      dir, std::chrono::hours(1),
      [&](bool) {
        std::error_code ec;
        auto size = std::filesystem::file_size(file, ec);
        if (!ec) seen = static_cast<int64_t>(size);
      },
      std::chrono::hours(1));
  std::ofstream(file) << "x\n";
  while (seen == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(inotify_instances(), before);
}

TEST(StreamWatcher, ANudgeBringsAPassWithoutWaitingForTheInterval) {
  std::string dir = test::scratch_dir("ddprun_watch_");
  std::atomic<int> passes{0};
  // Neither the interval nor early polls nor a write can be what brings it.
  StreamWatcher watcher(
      dir, std::chrono::hours(1), [&](bool) { ++passes; }, std::chrono::milliseconds(0));
  while (passes == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the first
  int before = passes;
  watcher.nudge(std::chrono::milliseconds(1));
  while (passes == before) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  SUCCEED();
}

TEST(StreamWatcher, ARequestedFinalPassIsAwaitedLater) {
  std::string dir = test::scratch_dir("ddprun_watch_");
  std::atomic<int> finals{0};
  StreamWatcher watcher(dir, std::chrono::hours(1), [&](bool final) { finals += final; });
  uint64_t first = watcher.request_final();
  uint64_t second = watcher.request_final();
  watcher.await_final(second);
  EXPECT_GE(finals.load(), 1);
  watcher.await_final(first);  // covered already: returns at once
}

}  // namespace
}  // namespace ddprun::tracking
