// The tracker a launcher reports to: the run on disk before the workers start, its
// records while the job runs and all of them at its end, the primary's run and the
// forwarding nodes' parts, the run's owner lock.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "common/host.h"
#include "tests/unit/tracking_test_support.h"
#include "tracking/own_records.h"
#include "tracking/part_merge.h"
#include "tracking/run_image.h"
#include "tracking/run_owner_lock.h"
#include "tracking/run_reading.h"
#include "tracking/run_store.h"
#include "tracking/run_summary.h"
#include "tracking/run_tracker.h"
#include "tracking/stream_ingester.h"
#include "tracking/tfevents.h"

namespace ddprun::tracking {
namespace {

using namespace tracking_test;

// Files the agent collects into the run (a hang's NCCL dumps) go to a directory of
// this node's in the run; one the job left empty goes with it.
TEST(RunTrackerFiles, ADirectoryOfTheNodeInTheRunKeptOnlyWhenUsed) {
  std::string base = temp_run_dir();
  for (bool used : {false, true}) {
    RunTracker::Options o = run_in(base, used ? "used" : "unused");
    std::string dir;
    {
      RunTracker tracker(o);
      dir = tracker.files_dir();
      ASSERT_EQ(dir.rfind(base + "/" + o.run_id + "/files/", 0), 0u) << dir;
      EXPECT_TRUE(std::filesystem::is_directory(dir));
      EXPECT_EQ(tracker.files_dir(), dir) << "made once";
      if (used) append(dir + "/attempt_0_nccl_trace_rank_0", "dump");
      tracker.finished("finished", 0, "");
    }
    EXPECT_EQ(std::filesystem::exists(dir), used) << dir;
    EXPECT_EQ(std::filesystem::exists(base + "/" + o.run_id + "/files"), used);
  }
  std::filesystem::remove_all(base);
}

// Reads a run as `ddprun runs` does.
int64_t events_in(const std::string& run_dir, const std::string& kind) {
  try {
    RunStore store(run_dir, RunStore::Open::kReadOnly);
    return store.count_events(kind);
  } catch (const TrackingError&) {
    return 0;  // not made yet, or its schema not yet written
  }
}

// One attempt of one worker, which exits, then the job's end.
void one_worker_job(RunTracker& tracker, const std::string& status, int code,
                    const std::string& cause) {
  tracker.rendezvous_complete({0, 0, 1, {"a"}, {}, {}, ""});
  tracker.worker_started(0, 0, 0, 0, ::getpid());
  tracker.worker_exited(0, 0, 0, 0, 0);
  tracker.attempt_ended();
  tracker.finished(status, code, cause);
}

// One attempt of one worker, of node `node` and rank `rank`, that logs one point into
// its stream under `dir` and exits.
void one_logging_attempt(RunTracker& tracker, const std::string& dir, int node, int rank) {
  tracker.worker_started(node, rank, 0, 0, ::getpid());
  append(stream_path(dir, node, rank, 0), R"({"k":"log","seq":1,"d":{"loss":1}})"
                                          "\n");
  tracker.worker_exited(node, rank, 0, 0, 0);
  tracker.attempt_ended();
}

std::optional<std::string> status_of(const std::string& run_dir) {
  RunStore store(run_dir, RunStore::Open::kReadOnly);
  return store.meta("status");
}

// System metrics are sampled on tracking's own clock: a worker that runs is sampled
// again and again with nothing from the agent but its start.
TEST(RunTrackerRecords, SystemSamplesComeOnTrackingsOwnClock) {
  std::string base = temp_run_dir();
  RunTracker::Options o = run_in(base, "sampled");
  o.system_interval = std::chrono::milliseconds(20);
  std::string run = base + "/sampled";
  RunTracker tracker(o);
  tracker.rendezvous_complete({0, 0, 1, {"a"}, {}, {}, ""});
  tracker.worker_started(0, 0, 0, 0, ::getpid());
  auto samples = [&] {
    try {
      RunStore store(run, RunStore::Open::kReadOnly);
      for (const auto& [key, n, last] : store.system_metric_summaries()) {
        if (key == "memory_percent") return n;
      }
    } catch (const TrackingError&) {
    }
    return int64_t{0};
  };
  // (The bound only keeps a failure from hanging; no timing is asserted.)
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (samples() < 3 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GE(samples(), 3);
  tracker.worker_exited(0, 0, 0, 0, 0);
  tracker.attempt_ended();
  tracker.finished("finished", 0, "");
  tracker.complete();
  std::filesystem::remove_all(base);
}

// What the agent records is written by the stream thread: in run.db a moment later
// while the job runs, and all of it once complete() returns after finished().
TEST(RunTrackerRecords, AreInTheRunWhileTheJobRunsAndAllOfThemWhenItFinishes) {
  std::string base = temp_run_dir();
  RunTracker::Options o = run_in(base, "records");
  std::string run = base + "/records";
  RunTracker tracker(o);
  tracker.rendezvous_complete({0, 0, 2, {"a"}, {}, {}, ""});
  tracker.may_start_workers(0, true);
  tracker.worker_started(0, 0, 0, 0, ::getpid());
  // No timing in the assertion: nothing but the stream thread's own pass writes it.
  while (events_in(run, "worker_started") == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  tracker.worker_started(0, 1, 1, 0, ::getpid());
  tracker.worker_exited(0, 0, 0, 0, 0);
  tracker.worker_exited(0, 1, 1, 0, 0);
  tracker.attempt_ended();
  tracker.finished("finished", 0, "");
  tracker.complete();
  EXPECT_EQ(events_in(run, "run_started"), 1);
  EXPECT_EQ(events_in(run, "rendezvous"), 1);
  EXPECT_EQ(events_in(run, "worker_started"), 2);
  EXPECT_EQ(events_in(run, "worker_exited"), 2);
  EXPECT_EQ(events_in(run, "run_finished"), 1);
  EXPECT_EQ(RunStore(run, RunStore::Open::kReadOnly).meta("status"), "finished");
  std::filesystem::remove_all(base);
}

// finished() stops the stream thread; the tracker's end runs the last pass all the
// same, with no complete() call.
TEST(RunTrackerRecords, AreAllInTheRunOnceTheTrackerEndsAfterFinished) {
  std::string base = temp_run_dir();
  RunTracker::Options o = run_in(base, "ended");
  {
    RunTracker tracker(o);
    one_worker_job(tracker, "finished", 0, "");
  }
  std::string run = base + "/ended";
  EXPECT_EQ(events_in(run, "worker_exited"), 1);
  EXPECT_EQ(events_in(run, "run_finished"), 1);
  EXPECT_EQ(status_of(run), "finished");
  std::filesystem::remove_all(base);
}

// The primary of a multi-node job whose run cannot be made (a link to nowhere where its
// directory goes: no run there, and none can be made) says so once and goes on: the
// job's end, with no stream thread, is quiet.
TEST(RunTrackerRecords, APrimaryWhoseRunCouldNotBeMadeEndsQuietly) {
  std::string base = temp_run_dir();
  RunTracker::Options o = run_in(base, "blocked");
  o.multi_node = true;
  std::filesystem::create_symlink(base + "/nowhere/at/all", base + "/blocked");
  {
    RunTracker tracker(o);
    tracker.attach("127.0.0.1:29400", true);
    tracker.worker_started(0, 0, 0, 0, ::getpid());
    tracker.worker_exited(0, 0, 0, 0, 0);
    tracker.finished("finished", 0, "");
    tracker.complete();
  }
  EXPECT_TRUE(std::filesystem::is_symlink(base + "/blocked"));
  EXPECT_FALSE(std::filesystem::exists(base + "/blocked.1")) << "no run made elsewhere";
  std::filesystem::remove_all(base);
}

// The run is on disk before the first worker starts, and the workers need not wait
// for its description: a job killed from then on leaves a readable run, which
// `runs list` calls crashed, not a half-made file or none.
TEST(RunTrackerRecords, TheRunIsOnDiskBeforeTheWorkersStartWhichNeedNotWaitForIt) {
  std::string base = temp_run_dir();
  RunTracker::Options o = run_in(base, "made");
  std::string run = base + "/made";
  {
    RunTracker tracker(o);
    EXPECT_TRUE(std::filesystem::is_directory(run + "/streams"));
    EXPECT_TRUE(RunOwnerLock::held(run));
    while (!run_exists(run)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    {
      RunStore made(run, RunStore::Open::kReadOnly);  // throws if it were not a database
      EXPECT_EQ(effective_status(made), "running") << "described or not, its owner holds it";
    }
    tracker.rendezvous_complete({0, 0, 1, {"a"}, {}, {}, ""});
    EXPECT_TRUE(tracker.may_start_workers(0, false)) << "nothing to wait for in a first attempt";
    tracker.finished("finished", 0, "");
    tracker.complete();
  }
  EXPECT_EQ(status_of(run), "finished");
  EXPECT_EQ(events_in(run, "run_started"), 1);
  std::filesystem::remove_all(base);
}

// A job that ends at once leaves a complete run.db: everything is in it when the
// tracker ends, no reader helps.
TEST(RunTrackerRecords, AShortJobLeavesACompleteRunDb) {
  std::string base = temp_run_dir();
  std::string run = base + "/short";
  RunTracker::Options o = run_in(base, "short");
  {
    RunTracker tracker(o);
    one_worker_job(tracker, "failed", 3, "rank 0");
    tracker.complete();
  }
  EXPECT_FALSE(needs_repair(run));
  RunStore store(run, RunStore::Open::kReadOnly);
  EXPECT_EQ(store.meta("status"), "failed");
  EXPECT_EQ(store.meta("exit_code"), "3");
  EXPECT_EQ(store.meta("root_cause"), "rank 0");
  EXPECT_EQ(store.meta("run_id"), "short");
  EXPECT_EQ(effective_status(store), "failed");
  EXPECT_EQ(store.count_events("run_started"), 1);
  EXPECT_EQ(store.count_events("worker_exited"), 1);
  EXPECT_EQ(store.count_events("run_finished"), 1);
  std::filesystem::remove_all(base);
}

// Workers that record make the launcher fold everything itself, as before: run.db
// holds it all when the tracker ends, with no reader's help.
TEST(RunTrackerRecords, AJobWhoseWorkersRecordIsInRunDbWhenItEnds) {
  std::string base = temp_run_dir();
  std::string run = base + "/logged";
  {
    RunTracker tracker(run_in(base, "logged"));
    one_logging_attempt(tracker, run, 0, 0);
    tracker.finished("finished", 0, "");
  }
  RunStore store(run, RunStore::Open::kReadOnly);
  EXPECT_EQ(store.metric_count(), 1);
  EXPECT_EQ(store.meta("status"), "finished");
  EXPECT_EQ(store.count_events("worker_exited"), 1);
  std::filesystem::remove_all(base);
}

// Two jobs of one id starting at the same moment: the one that finds the run's
// directory locked (no run.db in it yet) takes the next name, as after an earlier job.
TEST(RunTrackerRecords, ARunDirectoryAnotherJobHoldsIsNotShared) {
  std::string base = temp_run_dir();
  std::filesystem::create_directories(base + "/same/streams");
  auto other = RunOwnerLock::take(base + "/same");
  ASSERT_TRUE(other);
  RunTracker::Options o = run_in(base, "same");
  {
    RunTracker tracker(o);
    EXPECT_EQ(tracker.run_dir(), base + "/same.1");
    tracker.finished("finished", 0, "");
  }
  EXPECT_FALSE(std::filesystem::exists(base + "/same/run.db")) << "the other job's";
  EXPECT_EQ(status_of(base + "/same.1"), "finished");
  std::filesystem::remove_all(base);
}

// The two kinds of a node's part, chosen once: the primary makes the run when the
// store is up and publishes it; another node finds it at its first round (whatever
// name the run took), keeps its records in its part and sends them on; the job's one
// run holds them, the job-wide events once, and the part goes once all of it arrived.
TEST(RunTrackerNodes, AForwardingNodesRecordsAreInThePrimarysRunWhateverItsName) {
  std::string base = temp_run_dir();
  std::filesystem::create_directories(base + "/two/streams");
  auto other = RunOwnerLock::take(base + "/two");  // another job's run of the same id
  ASSERT_TRUE(other);
  RunTracker::Options o = run_in(base, "two");
  o.multi_node = true;
  std::string part;
  {
    RunTracker primary(o);
    RunTracker node(o);
    EXPECT_EQ(primary.run_dir(), "") << "no run before the store is up";
    std::string published = primary.attach("127.0.0.1", true);
    EXPECT_EQ(node.attach("127.0.0.1", false), "") << "only the primary has a run to share";
    EXPECT_EQ(primary.run_dir(), base + "/two.1");
    EXPECT_EQ(node.run_dir(), "") << "found at the first round";
    primary.rendezvous_complete({0, 0, 2, {"a", "b"}, {}, {}, ""});
    node.rendezvous_complete({0, 0, 2, {"a", "b"}, {}, {}, published});
    part = node.run_dir();
    EXPECT_EQ(part.rfind(base + "/two.1/parts/", 0), 0u) << part;
    one_logging_attempt(node, part, 1, 1);
    node.finished("finished", 0, "");
    primary.attempt_ended();
    primary.finished("finished", 0, "");
    primary.complete();
  }
  EXPECT_FALSE(std::filesystem::exists(part)) << "the primary holds all of it";
  RunStore run(base + "/two.1", RunStore::Open::kReadOnly);
  EXPECT_EQ(run.count_events("rendezvous"), 1) << "a job-wide event, once";
  EXPECT_EQ(run.count_events("worker_started"), 1);
  EXPECT_EQ(run.count_events("worker_exited"), 1);
  EXPECT_EQ(run.metric_count(), 1);
  EXPECT_EQ(run.meta("status"), "finished");
  std::filesystem::remove_all(base);
}

// A launcher killed before its stream thread wrote the empty run leaves a locked
// directory: no run while the lock is held (it is being made), a crashed one after,
// which readers list without writing and `runs repair` makes.
TEST(RunOwnerLock, ARunDirectoryWhoseLauncherDiedBeforeRunDbIsACrashedRun) {
  std::string dir = temp_run_dir();  // streams/ and nothing else
  {
    auto lock = RunOwnerLock::take(dir);
    ASSERT_TRUE(lock);
    EXPECT_FALSE(run_exists(dir));
  }
  EXPECT_TRUE(run_exists(dir));
  EXPECT_TRUE(needs_repair(dir));
  EXPECT_FALSE(std::filesystem::exists(dir + "/run.db")) << "a reader wrote it";
  recover_run(dir);
  RunStore s(dir, RunStore::Open::kReadOnly);
  EXPECT_EQ(effective_status(s), "crashed");
  std::string not_a_run = test::scratch_dir("ddprun_run_");
  EXPECT_FALSE(run_exists(not_a_run)) << "a directory without streams/ is left alone";
  EXPECT_FALSE(std::filesystem::exists(not_a_run + "/run.db"));
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(not_a_run);
}

// A run whose launcher died lasted until its last record, not until whoever reads it.
TEST(RunSummary, ACrashedRunsDurationEndsAtItsLastRecord) {
  std::string dir = temp_run_dir();
  pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ::waitpid(gone, nullptr, 0);  // its pid names no process now: the owner died
  {
    RunStore s(dir, RunStore::Open::kCreate);
    s.set_meta("status", "running");
    s.set_meta("created", "1000");
    s.set_meta("owner_pid", std::to_string(gone));
    s.set_meta("owner_host", host_name());
    s.add_event({1000, "run_started", -1, -1, -1, "{}"});
    s.add_system_metrics(0, 1007, {{"memory_percent", 40}});
    s.add_event({1005, "worker_started", 0, 0, 0, "{}"});
  }
  RunStore s(dir, RunStore::Open::kReadOnly);
  RunSummary r = summarize_run(s, "c");
  EXPECT_EQ(r.status, "crashed");
  EXPECT_DOUBLE_EQ(run_duration(r), 7) << "the last record, a system sample, came at +7 s";
  std::filesystem::remove_all(dir);
}

// A run whose description was never written (its owner died first) is running while
// the run directory's lock is held, and crashed once it is not.
TEST(RunOwnerLock, AnUndescribedRunIsRunningWhileLockedAndCrashedAfter) {
  std::string dir = temp_run_dir();
  EXPECT_TRUE(make_empty_run(dir));
  EXPECT_FALSE(make_empty_run(dir)) << "a run already there is kept";
  {
    auto lock = RunOwnerLock::take(dir);
    ASSERT_TRUE(lock);
    EXPECT_TRUE(RunOwnerLock::held(dir));
    EXPECT_FALSE(RunOwnerLock::take(dir)) << "one owner";
    RunStore s(dir, RunStore::Open::kReadOnly);
    EXPECT_EQ(effective_status(s), "running");
  }
  EXPECT_FALSE(RunOwnerLock::held(dir));
  RunStore s(dir, RunStore::Open::kReadOnly);
  EXPECT_EQ(effective_status(s), "crashed");
  EXPECT_FALSE(RunOwnerLock::held(dir + "/missing"));
  EXPECT_THROW(RunOwnerLock::take(dir + "/missing"), TrackingError);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ddprun::tracking
