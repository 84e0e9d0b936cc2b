#include "agent/hang/hang_report.h"

#include <gtest/gtest.h>

#include "agent/hang/stack_text.h"

namespace ddprun::agent {
namespace {

const char* kPythonDump =
    "Thread 0x00007f7fa90856c0 (most recent call first):\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 320 in wait\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 1002 in _bootstrap\n"
    "\n"
    "Current thread 0x00007f7fa9fd1b80 (most recent call first):\n"
    "  File \"/job/train.py\", line 42 in load_batch\n"
    "  File \"/job/train.py\", line 50 in <module>\n";

const char* kCollectiveDump =
    "Current thread 0x00007f7fa9fd1b80 (most recent call first):\n"
    "  File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", line 1541 "
    "in all_reduce\n"
    "  File \"/job/train.py\", line 51 in <module>\n";

const char* kEuStack =
    "PID 9249 - process\n"
    "TID 9249:\n"
    "#0  0x00007f7fa98ed545 clock_nanosleep@GLIBC_2.2.5\n"
    "#1  0x00007f7fa9d15ada __nanosleep\n"
    "#2  0x000056045ea434af\n"
    "#3  0x000056045ea434af main\n";

const char* kGdb =
    "Thread 1 (Thread 0x7f0 (LWP 77) \"worker\"):\n"
    "#0  0x00007f0 in clock_nanosleep () from /lib/x86_64-linux-gnu/libc.so.6\n"
    "#1  0x00007f1 in ncclProxyService () from /usr/lib/libnccl.so.2\n"
    "#2  main () at worker.cc:12\n";

TEST(StackText, ReadsEveryPythonThreadAndFindsTheMainOne) {
  auto threads = parse_python_stacks(kPythonDump);
  ASSERT_EQ(threads.size(), 2u);
  const ThreadStack* main = main_thread(threads);
  ASSERT_NE(main, nullptr);
  ASSERT_EQ(main->frames.size(), 2u);
  EXPECT_EQ(main->frames[0].function, "load_batch");
  EXPECT_EQ(main->frames[0].file, "/job/train.py");
  EXPECT_EQ(main->frames[0].line, 42);
}

TEST(StackText, ReadsEuStackAndGdb) {
  auto eu = parse_native_stacks(kEuStack);
  ASSERT_EQ(eu.size(), 1u);
  ASSERT_EQ(eu[0].frames.size(), 4u);
  EXPECT_EQ(eu[0].frames[0].function, "clock_nanosleep");
  EXPECT_EQ(eu[0].frames[2].function, "");
  EXPECT_EQ(eu[0].frames[3].function, "main");
  auto gdb = parse_native_stacks(kGdb);
  ASSERT_EQ(gdb.size(), 1u);
  ASSERT_EQ(gdb[0].frames.size(), 3u);
  EXPECT_EQ(gdb[0].frames[1].function, "ncclProxyService");
  EXPECT_EQ(gdb[0].frames[2].function, "main");
}

TEST(StackText, GarbageGivesNoFrames) {
  EXPECT_TRUE(parse_python_stacks("\x01\x02 nothing here\n  File \"x").empty());
  auto t = parse_native_stacks("#\n#0\nTID:\n#1 0x\n");
  for (const auto& thread : t)
    for (const auto& f : thread.frames) EXPECT_TRUE(f.function.empty() || f.function == "0x");
}

RankReport rank(int r, const char* python, char state = 'S') {
  RankReport rep;
  rep.rank = r;
  rep.local_rank = r;
  rep.host = std::string("h");
  rep.state = state;
  rep.python_stack = python;
  rep.step = 4;
  describe_stacks(rep);
  return rep;
}

TEST(HangReport, TheRankOutsideTheCollectiveIsTheCulprit) {
  std::vector<RankReport> ranks = {rank(0, kCollectiveDump), rank(1, kPythonDump)};
  EXPECT_TRUE(ranks[0].in_collective);
  EXPECT_FALSE(ranks[1].in_collective);
  HangDiagnosis d = diagnose(ranks);
  EXPECT_EQ(d.culprits, std::vector<int>{1});
  EXPECT_NE(d.summary.find("culprit: rank 1 (local_rank 1) on node 0 (h) is in load_batch "
                           "(train.py:42)"),
            std::string::npos)
      << d.summary;
  EXPECT_NE(d.summary.find("rank 0 is in all_reduce (distributed_c10d.py:1541), called from "
                           "<module> (train.py:51)"),
            std::string::npos)
      << d.summary;
}

TEST(HangReport, UninterruptibleSleepComesFirst) {
  std::vector<RankReport> ranks = {rank(0, kPythonDump), rank(1, kCollectiveDump, 'D'),
                                   rank(2, kCollectiveDump)};
  ranks[1].wait_channel = "fuse_wait";
  HangDiagnosis d = diagnose(ranks);
  EXPECT_EQ(d.culprits, std::vector<int>{1});
  EXPECT_NE(d.summary.find("uninterruptible sleep (D: fuse_wait)"), std::string::npos);
}

// A rank that cannot run (stopped: SIGSTOP, a frozen cgroup) while the others can is the
// culprit, named with its state and where the kernel holds it, even in a collective.
TEST(HangReport, AStoppedRankIsTheCulprit) {
  std::vector<RankReport> ranks = {rank(0, kCollectiveDump), rank(1, kCollectiveDump, 'T'),
                                   rank(2, kPythonDump)};
  ranks[1].wait_channel = "do_signal_stop";
  HangDiagnosis d = diagnose(ranks);
  EXPECT_EQ(d.culprits, std::vector<int>{1});
  EXPECT_NE(d.summary.find("stopped (T: do_signal_stop)"), std::string::npos) << d.summary;
}

// Stacks alike and no collective recognised (a native program, say), but three ranks
// spin a core each while one sleeps: the sleeper. Unknown or middling use decides
// nothing.
TEST(HangReport, AnIdleRankAmongSpinningOnesIsTheCulprit) {
  std::vector<RankReport> ranks = {rank(0, kPythonDump), rank(1, kPythonDump), rank(2, kPythonDump),
                                   rank(3, kPythonDump)};
  for (auto& r : ranks) r.cpu_percent = 99;
  ranks[2].cpu_percent = 0.4;
  ranks[2].step = 3;  // evidence further down the list would name it too; 0 says why
  ranks[0].step = 3;
  HangDiagnosis d = diagnose(ranks);
  EXPECT_EQ(d.culprits, std::vector<int>{2});
  EXPECT_EQ(d.why, "idle while the others spin (a collective that waits busily, as NCCL's does)");
  ranks[1].cpu_percent = 30;  // not clearly busy: the CPU tells nothing
  EXPECT_NE(diagnose(ranks).why, d.why);
  ranks[1].cpu_percent = -1;  // unknown
  EXPECT_NE(diagnose(ranks).why, d.why);
}

TEST(HangReport, TheSmallerGroupThenTheLowestStep) {
  std::vector<RankReport> ranks = {rank(0, kPythonDump), rank(1, kPythonDump), rank(2, kEuStack)};
  // No collective anywhere: the odd one out by where it stopped.
  ranks[2].python_stack.clear();
  ranks[2].native_stack = kEuStack;
  describe_stacks(ranks[2]);
  EXPECT_EQ(diagnose(ranks).culprits, std::vector<int>{2});
  std::vector<RankReport> alike = {rank(0, kPythonDump), rank(1, kPythonDump)};
  alike[0].step = 9;
  EXPECT_EQ(diagnose(alike).culprits, std::vector<int>{1});
  alike[0].step = 4;
  EXPECT_TRUE(diagnose(alike).culprits.empty());
}

// Every rank waits in the same place on its stacks (an NCCL job's ranks all sit in
// the same synchronize), but rank 2's flight recorder never entered collective #42.
TEST(HangReport, TheFlightRecorderNamesTheRankBehindInCollectives) {
  std::vector<RankReport> ranks;
  for (int r = 0; r < 4; ++r) {
    ranks.push_back(rank(r, kCollectiveDump));
    bool behind = r == 2;
    ranks[r].nccl = {"2.3",
                     {{"0", behind ? 41 : 42, "nccl:all_reduce", behind ? "completed" : "started",
                       "[[1024]]", 41}}};
    ranks[r].nccl_dump = "/logs/" + std::to_string(r) + "/nccl_trace_rank_" + std::to_string(r);
  }
  HangDiagnosis d = diagnose(ranks);
  EXPECT_EQ(d.culprits, std::vector<int>{2});
  EXPECT_EQ(d.why, "behind the others in NCCL collectives (flight recorder, process group 0)");
  EXPECT_NE(d.headline.find("rank 2 (local_rank 2) on node 0 (h) stopped in all_reduce"),
            std::string::npos)
      << d.headline;
  EXPECT_NE(d.headline.find("(NCCL: at #41 nccl:all_reduce (completed), the others at #42 "
                            "nccl:all_reduce (started))"),
            std::string::npos)
      << d.headline;
  EXPECT_NE(d.summary.find("NCCL flight recorder, process group 0: rank 2 at #41 nccl:all_reduce "
                           "(completed); ranks 0,1,3 at #42 nccl:all_reduce (started)"),
            std::string::npos)
      << d.summary;
  std::string report = format_hang_report("hang", ranks, d);
  EXPECT_NE(report.find("--- NCCL flight recorder (/logs/2/nccl_trace_rank_2)\nprocess group 0: "
                        "entered #41 nccl:all_reduce (completed), input sizes [[1024]]; completed "
                        "up to #41"),
            std::string::npos)
      << report;
  // A rank whose dump did not come may be the one behind: the records name nobody then,
  // but still say where the others are.
  ranks[3].nccl = {};
  d = diagnose(ranks);
  EXPECT_TRUE(d.culprits.empty()) << d.why;
  EXPECT_NE(d.summary.find("; ranks 0,1 at #42"), std::string::npos) << d.summary;
}

TEST(HangReport, SurvivesTheTripThroughJson) {
  RankReport r = rank(3, kPythonDump);
  r.cpu_percent = 12.5;
  r.section = "eval";
  r.nccl = {"2.3", {{"0", 42, "nccl:all_reduce", "started", "[[8]]", 41}}};
  r.nccl_dump = "/logs/nccl_trace_rank_3";
  RankReport back = rank_report_from_json(to_json(r));
  ASSERT_EQ(back.nccl.groups.size(), 1u);
  EXPECT_EQ(describe_collective(back.nccl.groups[0]), "#42 nccl:all_reduce (started)");
  EXPECT_EQ(back.nccl_dump, r.nccl_dump);
  EXPECT_EQ(back.rank, 3);
  EXPECT_EQ(back.step, 4);
  EXPECT_EQ(back.where, r.where);
  EXPECT_EQ(back.section, "eval");
  EXPECT_EQ(back.python_stack, r.python_stack);
  RankReport junk = rank_report_from_json(nlohmann::json{{"rank", "x"}, {"step", "y"}});
  EXPECT_EQ(junk.rank, 0);
  EXPECT_FALSE(junk.step);
}

}  // namespace
}  // namespace ddprun::agent
