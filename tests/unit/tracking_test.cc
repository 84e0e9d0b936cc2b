// The run database and the ingestion of worker streams: schema, ordering, resume,
// torn last records and malformed lines.
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

TEST(RunStore, SchemaIsVersionedAndMetaPersists) {
  std::string dir = temp_run_dir();
  {
    RunStore s(dir, RunStore::Open::kCreate);
    s.set_meta("status", "running");
  }
  RunStore again(dir, RunStore::Open::kExisting);
  EXPECT_EQ(again.meta("status"), "running");
  EXPECT_EQ(again.meta("schema_version"), std::to_string(RunStore::kSchemaVersion));
  EXPECT_THROW(RunStore("/nonexistent/dir", RunStore::Open::kExisting), TrackingError);
}

TEST(RunStore, ANewRunIsTheBuiltInEmptyRunInWalMode) {
  std::string_view image = run_image("empty_run.db");
  ASSERT_GT(image.size(), 100u);
  EXPECT_EQ(image.substr(0, 16), std::string_view("SQLite format 3\0", 16));
  EXPECT_EQ(image[18], 2) << "WAL: no journal mode to switch when a run is made";
  EXPECT_EQ(image[19], 2);
  std::string dir = temp_run_dir();
  {
    RunStore s(dir, RunStore::Open::kCreate);
    s.begin();
    s.add_event({1.5, "run_started", -1, -1, -1, "{}"});
    s.commit();
  }
  RunStore again(dir, RunStore::Open::kReadOnly);
  EXPECT_EQ(again.meta("schema_version"), std::to_string(RunStore::kSchemaVersion));
  EXPECT_EQ(again.count_events("run_started"), 1);
  EXPECT_EQ(again.metric_count(), 0);
}

TEST(RunStore, AnEmptyFileACrashLeftIsMadeIntoARun) {
  std::string dir = temp_run_dir();
  std::ofstream(dir + "/run.db").close();
  RunStore s(dir, RunStore::Open::kCreate);
  EXPECT_EQ(s.meta("schema_version"), std::to_string(RunStore::kSchemaVersion));
}

TEST(RunStore, ARunThatCannotBeWrittenOutIsNamedAndLeavesNoHalfDatabase) {
  std::string dir = temp_run_dir();
  // In a child: a file size limit below the image's size makes the write fail.
  pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit small{4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &small);
    try {
      RunStore s(dir, RunStore::Open::kCreate);
    } catch (const TrackingError& e) {
      std::string what = e.what();
      ::_exit(what.find("cannot write " + dir + "/run.db") != std::string::npos ? 0 : 2);
    }
    ::_exit(1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: no error; 2: an error not naming the file";
  EXPECT_FALSE(std::filesystem::exists(dir + "/run.db")) << "made whole next time";
  for (const auto& e : std::filesystem::directory_iterator(dir))
    EXPECT_EQ(e.path().filename(), "streams") << "no part left behind";
}

TEST(TfEvents, Crc32cIsCastagnolis) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);  // the published check value
  EXPECT_EQ(crc32c(""), 0u);
}

TEST(StreamIngester, StoresPointsInOrderWithRankAndAttempt) {
  std::string dir = temp_run_dir();
  RunStore store(dir, RunStore::Open::kCreate);
  StreamIngester ingester(store, dir);
  append(stream_path(dir, 0, 1, 0),
         R"({"k":"log","seq":1,"t":1.5,"step":10,"d":{"loss":0.5,"acc":1}})"
         "\n"
         R"({"k":"log","seq":2,"t":1.6,"step":5,"d":{"loss":0.4,"name":"x"}})"
         "\n");
  append(stream_path(dir, 0, 0, 1), R"({"k":"config","d":{"lr":0.1}})"
                                    "\n"
                                    R"({"k":"summary","d":{"best":0.9}})"
                                    "\n");
  auto stats = ingester.drain(false);
  EXPECT_EQ(stats.points, 3);
  EXPECT_EQ(stats.records, 4);
  auto points = store.metrics();
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points[0].rank, 1);
  EXPECT_EQ(points[0].seq, 1);
  EXPECT_EQ(points[2].key, "loss");
  EXPECT_EQ(points[2].step, 5) << "a step that goes backwards is stored, not dropped";
  EXPECT_EQ(points[2].value, 0.4);
}

TEST(StreamIngester, ResumesAndWaitsForCompleteLines) {
  std::string dir = temp_run_dir();
  RunStore store(dir, RunStore::Open::kCreate);
  StreamIngester ingester(store, dir);
  std::string path = stream_path(dir, 0, 0, 0);
  append(path, R"({"k":"log","seq":1,"d":{"a":1}})"
               "\n"
               R"({"k":"log","seq":2,"d":)");
  EXPECT_EQ(ingester.drain(false).points, 1);
  EXPECT_EQ(ingester.drain(false).points, 0) << "nothing new, nothing twice";
  append(path, R"({"b":2}})"
               "\n");
  EXPECT_EQ(ingester.drain(false).points, 1) << "the rest of the line arrived";
  EXPECT_EQ(store.metric_count(), 2);
}

TEST(StreamIngester, TornLastRecordIsCountedNotStored) {
  std::string dir = temp_run_dir();
  RunStore store(dir, RunStore::Open::kCreate);
  StreamIngester ingester(store, dir);
  std::string path = stream_path(dir, 0, 0, 0);
  append(path, R"({"k":"log","seq":1,"d":{"a":1}})"
               "\n"
               R"({"k":"log","seq":2,"d":{"a")");
  auto stats = ingester.drain(true);
  EXPECT_EQ(stats.points, 1);
  EXPECT_EQ(stats.torn_records, 1);
  EXPECT_EQ(ingester.drain(true).torn_records, 0) << "reported once";
}

// An agent's own events come back from its stream as they were recorded, their data
// put in as it is when it is one line and written again when it is not.
TEST(OwnRecords, EventsAreLinesTheIngesterReadsBack) {
  std::string dir = temp_run_dir();
  OwnRecords unset;
  unset.add_event({1, "dropped", -1, -1, -1, "{}"});
  EXPECT_NO_THROW(unset.flush()) << "no stream yet: dropped";
  OwnRecords own;
  own.set_path(dir + "/" + kLauncherStream);
  own.add_event({1.5, "one_line", 0, 1, 2, R"({"x":[1,"a"]})"});
  own.add_event({2.5, "two_lines", -1, -1, -1, "{\n\"y\": 2}"});
  own.flush();
  RunStore store(dir, RunStore::Open::kCreate);
  EXPECT_EQ(StreamIngester(store, dir, "", StreamIngester::Dir::kRun).drain(true).bad_lines, 0);
  auto events = store.events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, "one_line");
  EXPECT_EQ(events[0].wall, 1.5);
  EXPECT_EQ(events[0].attempt, 2);
  EXPECT_EQ(events[0].data_json, R"({"x":[1,"a"]})");
  EXPECT_EQ(events[1].data_json, R"({"y":2})");
  std::filesystem::remove_all(dir);
}

// Only the launcher describes the run: a worker's stream cannot set its status, nor
// can anything that comes to the primary as another node's stream.
TEST(StreamIngester, AWorkerCannotDescribeTheRun) {
  std::string dir = temp_run_dir();
  RunStore store(dir, RunStore::Open::kCreate);
  StreamIngester ingester(store, dir, "", StreamIngester::Dir::kRun);
  append(stream_path(dir, 0, 0, 0), R"({"k":"meta","d":{"status":"finished"}})"
                                    "\n");
  append(dir + "/" + kLauncherStream, R"({"k":"meta","d":{"status":"failed"}})"
                                      "\n");
  EXPECT_EQ(ingester.drain(false).bad_lines, 1);
  EXPECT_EQ(store.meta("status"), "failed");
  StreamOrigin origin;
  EXPECT_FALSE(parse_stream_name(kLauncherStream, origin)) << "no peer may send it";
}

// Readers only read: what a killed launcher left unfolded is said (needs_repair) and
// folded by `runs repair` (recover_run), never while the launcher lives.
TEST(StreamIngester, WhatAKilledLauncherLeftIsFoldedOnlyByRepair) {
  std::string dir = temp_run_dir();
  make_empty_run(dir);
  append(dir + "/" + kLauncherStream, R"({"k":"meta","d":{"status":"failed"}})"
                                      "\n");
  {
    auto owner = RunOwnerLock::take(dir);
    ASSERT_TRUE(owner);
    EXPECT_FALSE(needs_repair(dir)) << "its launcher lives: it folds them itself";
    EXPECT_THROW(recover_run(dir), TrackingError);
  }
  EXPECT_TRUE(needs_repair(dir));
  EXPECT_FALSE(RunStore(dir, RunStore::Open::kReadOnly).meta("status")) << "reading wrote nothing";
  recover_run(dir);
  EXPECT_FALSE(needs_repair(dir));
  EXPECT_EQ(RunStore(dir, RunStore::Open::kReadOnly).meta("status"), "failed");
  std::filesystem::remove_all(dir);
}

TEST(StreamIngester, MalformedLinesAreSkippedAndCounted) {
  std::string dir = temp_run_dir();
  RunStore store(dir, RunStore::Open::kCreate);
  StreamIngester ingester(store, dir);
  append(stream_path(dir, 0, 0, 0),
         "garbage\n{\"k\":\"odd\",\"d\":{}}\n"
         R"({"k":"log","seq":3,"d":{"ok":1}})"
         "\n");
  auto stats = ingester.drain(false);
  EXPECT_EQ(stats.bad_lines, 2);
  EXPECT_EQ(stats.points, 1);
}

}  // namespace
}  // namespace ddprun::tracking
