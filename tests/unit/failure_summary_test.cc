#include "agent/failure_summary.h"
#include "tests/helpers/scratch.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace ddprun::agent {
namespace {

std::string temp_file(const std::string& content) {
  std::string path = test::scratch_file("ddprun_err_");
  std::ofstream(path) << content;
  return path;
}

TEST(DescribeFailure, ReadsTorchrunsErrorFile) {
  std::string path = temp_file(
      R"({"message": {"message": "ValueError: x", "extraInfo": {"py_callstack": "Traceback\nValueError: x", "timestamp": "1700000000"}}})");
  auto r = describe_failure(3, 1, 42, 1, 5, path);
  EXPECT_EQ(r.error_file, path);
  EXPECT_EQ(r.traceback, "Traceback\nValueError: x");
  EXPECT_EQ(r.time, 1700000000);
}

TEST(DescribeFailure, StringMessageForm) {
  std::string path = temp_file(R"({"message": "plain text", "timestamp": 12})");
  auto r = describe_failure(0, 0, 1, 1, 5, path);
  EXPECT_EQ(r.traceback, "plain text");
  EXPECT_EQ(r.time, 12);
}

TEST(DescribeFailure, BrokenFileIsReportedNotThrown) {
  auto r = describe_failure(0, 0, 1, 1, 5, temp_file("{not json"));
  EXPECT_NE(r.traceback.find("could not be read"), std::string::npos);
}

TEST(DescribeFailure, SignalAndNoFile) {
  auto sig = describe_failure(0, 0, 77, -9, 5, "/nonexistent/error.json");
  EXPECT_EQ(sig.traceback, "Signal 9 (SIGKILL) received by PID 77");
  EXPECT_EQ(sig.error_file, "");
  auto code = describe_failure(0, 0, 77, 2, 5, "");
  EXPECT_NE(code.traceback.find("To enable traceback"), std::string::npos);
}

TEST(FailureSummary, TorchrunsShape) {
  FailureRecord root{1, 1, 200, 7, 0, "", "boom", {}};
  FailureRecord other{0, 0, 100, -15, 0, "/e.json", "line1\nline2", {}};
  std::string s = format_failure_summary("train.py", "node0", {root, other});
  std::istringstream in(s);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  // As torchrun: the border is as wide as the title or the widest failure line, at most 60.
  size_t widest = 0;
  for (const auto& l : lines)
    if (l.rfind("Root Cause", 0) != 0) widest = std::max(widest, l.size());
  EXPECT_EQ(lines[0], std::string(std::min<size_t>(widest, 60), '='));
  EXPECT_EQ(lines[1], "train.py FAILED");
  EXPECT_EQ(lines[3], "Failures:");
  EXPECT_EQ(lines[4], "[0]:");  // rank 0 is the other failure, indexed by rank order
  EXPECT_NE(s.find("  traceback : line1\n  line2\n"), std::string::npos) << s;
  auto root_at = s.find("Root Cause (first observed failure):\n[1]:");
  ASSERT_NE(root_at, std::string::npos) << s;
  EXPECT_NE(s.find("  rank      : 1 (local_rank: 1)", root_at), std::string::npos);
  EXPECT_NE(s.find("  exitcode  : 7 (pid: 200)", root_at), std::string::npos);
  EXPECT_NE(s.find("  host      : node0"), std::string::npos);
  EXPECT_NE(s.find("  error_file: <N/A>", root_at), std::string::npos);
  EXPECT_EQ(lines.back(), lines[0]);
  std::string long_tb(100, 'x');
  std::string wide = format_failure_summary("t", "h", {{0, 0, 1, 1, 0, "", long_tb, {}}});
  EXPECT_EQ(wide.substr(0, wide.find('\n')), std::string(60, '='));
}

TEST(FailureSummary, NoOtherFailures) {
  std::string s = format_failure_summary("t", "h", {{0, 0, 1, 1, 0, "", "x", {}}});
  EXPECT_NE(s.find("Failures:\n  <NO_OTHER_FAILURES>\n"), std::string::npos) << s;
}

// The files a failed worker's output went to (--redirects/--tee) are named with it.
TEST(FailureSummary, NamesTheFailedWorkersLogFiles) {
  FailureRecord f{0, 0, 1, 1, 0, "", "x", {{"stdout", "/l/0/stdout.log"}, {"stderr", "/l/0/stderr.log"}}};
  std::string s = format_failure_summary("t", "h", {f});
  EXPECT_NE(s.find("  error_file: <N/A>\n  stdout    : /l/0/stdout.log\n"
                   "  stderr    : /l/0/stderr.log\n  traceback : x"),
            std::string::npos)
      << s;
}

}  // namespace
}  // namespace ddprun::agent
