// Worker output: untouched by default, --tee/--redirects/--log_dir layout, the line
// prefix, --local_ranks_filter, and whole lines only on the console.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/blackbox/ddprun_process.h"

namespace ddprun::test {
namespace {

Finished run_lines(std::vector<std::string> flags,
                   const std::map<std::string, std::optional<std::string>>& env = {}) {
  flags.insert(flags.end(), {"--no_python", test_worker_binary(), "lines", "alpha", "beta"});
  auto all_env = env;
  all_env.emplace("OMP_NUM_THREADS", "1");
  return run_ddprun(flags, all_env);
}

// The one run directory under a --log_dir base.
std::string run_dir(const std::string& base) {
  std::vector<std::string> dirs;
  for (const auto& e : std::filesystem::directory_iterator(base)) dirs.push_back(e.path());
  EXPECT_EQ(dirs.size(), 1u);
  return dirs.empty() ? "" : dirs.front();
}

TEST(Output, PassesThroughUntouchedByDefault) {
  Finished f = run_lines({});
  EXPECT_EQ(f.code, 0);
  EXPECT_EQ(f.out, "alpha\nbeta\n");
  EXPECT_EQ(f.err, "err:alpha\nerr:beta\n");
}

TEST(Output, TeePrefixesTheConsoleAndWritesTorchrunsLayout) {
  std::string base = make_temp_dir();
  Finished f = run_lines({"--nproc_per_node=2", "--tee=3", "--log_dir", base, "--rdzv_id=job1"});
  ASSERT_EQ(f.code, 0) << f.err;
  EXPECT_NE(f.out.find("[default0]:alpha\n"), std::string::npos) << f.out;
  EXPECT_NE(f.out.find("[default1]:beta\n"), std::string::npos) << f.out;
  EXPECT_NE(f.err.find("[default1]:err:beta\n"), std::string::npos) << f.err;
  std::string dir = run_dir(base);
  EXPECT_EQ(std::filesystem::path(dir).filename().string().rfind("job1_", 0), 0u) << dir;
  EXPECT_EQ(read_file(dir + "/attempt_0/1/stdout.log"), "alpha\nbeta\n");
  EXPECT_EQ(read_file(dir + "/attempt_0/0/stderr.log"), "err:alpha\nerr:beta\n");
}

TEST(Output, RedirectsSendStreamsToFilesOnly) {
  std::string base = make_temp_dir();
  Finished f = run_lines({"--redirects=1", "--log_dir=" + base});
  ASSERT_EQ(f.code, 0) << f.err;
  EXPECT_EQ(f.out, "");
  EXPECT_EQ(f.err, "err:alpha\nerr:beta\n");
  EXPECT_EQ(read_file(run_dir(base) + "/attempt_0/0/stdout.log"), "alpha\nbeta\n");
}

// torchrun tees a stream that is both redirected and tee'd (tee implies the file): it is
// on the console and in its file.
TEST(Output, ATeedStreamIsOnTheConsoleEvenWhenRedirected) {
  std::string base = make_temp_dir();
  Finished f = run_lines({"--tee=3", "--redirects=3", "--log_dir=" + base});
  ASSERT_EQ(f.code, 0) << f.err;
  EXPECT_EQ(f.out, "[default0]:alpha\n[default0]:beta\n");
  EXPECT_EQ(f.err, "[default0]:err:alpha\n[default0]:err:beta\n");
  EXPECT_EQ(read_file(run_dir(base) + "/attempt_0/0/stdout.log"), "alpha\nbeta\n");
}

TEST(Output, PerRankMapsApplyToTheirRanksOnly) {
  std::string base = make_temp_dir();
  Finished f = run_lines({"--nproc_per_node=2", "-r", "1:3", "--log_dir", base});
  ASSERT_EQ(f.code, 0) << f.err;
  EXPECT_EQ(f.out, "alpha\nbeta\n") << "rank 0 on the console, rank 1 in files";
  EXPECT_EQ(read_file(run_dir(base) + "/attempt_0/1/stderr.log"), "err:alpha\nerr:beta\n");
}

TEST(Output, LocalRanksFilterHidesOtherRanksButKeepsTheirLogs) {
  std::string base = make_temp_dir();
  Finished f =
      run_lines({"--nproc_per_node=3", "--tee=3", "--local_ranks_filter=1", "--log_dir", base});
  ASSERT_EQ(f.code, 0) << f.err;
  EXPECT_EQ(f.out, "[default1]:alpha\n[default1]:beta\n");
  EXPECT_EQ(read_file(run_dir(base) + "/attempt_0/2/stdout.log"), "alpha\nbeta\n");
}

TEST(Output, PrefixTemplateWithGlobalRankNodeAndHost) {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  Finished f = run_lines(
      {"--nproc_per_node=2", "--log_line_prefix_template=<${host}/n${node_rank}/r${rank}> "});
  ASSERT_EQ(f.code, 0) << f.err;
  std::string h = host;
  EXPECT_NE(f.out.find("<" + h + "/n0/r1> alpha\n"), std::string::npos) << f.out;
  Finished env = run_lines(
      {"--tee=1"}, {{"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE", "${role_name}-${local_rank}| "}});
  EXPECT_EQ(env.out, "default-0| alpha\ndefault-0| beta\n");
}

TEST(Output, LinesOfDifferentWorkersNeverInterleave) {
  Finished f =
      run_ddprun({"--nproc_per_node=4", "--no_python", test_worker_binary(), "chatter", "300"},
                 {{"OMP_NUM_THREADS", "1"}});
  ASSERT_EQ(f.code, 0) << f.err;
  // Each line must be exactly "rank<r> " + 200 x letter(r) + " line<i>".
  std::istringstream in(f.out);
  int n = 0;
  for (std::string l; std::getline(in, l); ++n) {
    ASSERT_GT(l.size(), 6u) << l;
    int r = l[4] - '0';
    std::string expected_head =
        "rank" + std::to_string(r) + " " + std::string(200, static_cast<char>('a' + r)) + " line";
    ASSERT_EQ(l.rfind(expected_head, 0), 0u) << "torn line: " << l.substr(0, 80);
    ASSERT_EQ(l.find_first_not_of("0123456789", expected_head.size()), std::string::npos) << l;
  }
  EXPECT_EQ(n, 4 * 300);
}

// The temporary log directory goes after a success, and after a failure or a stop
// when nothing in it can be read; an error file (or a log, a stack dump) keeps it.
TEST(Output, TemporaryLogDirIsKeptOnlyForWhatItHolds) {
  std::string tmp = make_temp_dir();
  Finished f = run_lines({}, {{"TMPDIR", tmp}});
  ASSERT_EQ(f.code, 0);
  EXPECT_TRUE(std::filesystem::is_empty(tmp));
  Finished failed = run_ddprun(
      {"--no_python", "--hang_timeout=600", test_worker_binary(), "exit", "1"}, {{"TMPDIR", tmp}});
  EXPECT_EQ(failed.code, 1);
  EXPECT_TRUE(std::filesystem::is_empty(tmp)) << "nothing to read in it (progress pages aside)";
  Finished with_error = run_ddprun({"--no_python", test_worker_binary(), "error_file", "it broke"},
                                   {{"TMPDIR", tmp}});
  EXPECT_EQ(with_error.code, 1);
  EXPECT_FALSE(std::filesystem::is_empty(tmp)) << "kept for the error file";
}

// Without --log_dir, redirected output goes to a temporary directory: the console says
// where at once, and a failed worker's summary names its log file, which is kept.
TEST(Output, RedirectedLogsOfATemporaryDirectoryAreNamed) {
  std::string tmp = make_temp_dir();
  Finished f = run_ddprun({"--no_python", "--redirects=2", "/bin/sh", "-c", "echo gone >&2; exit 3"},
                          {{"TMPDIR", tmp}});
  EXPECT_EQ(f.code, 3);
  EXPECT_NE(f.err.find("worker logs (--redirects/--tee) go to " + tmp + "/"), std::string::npos)
      << f.err;
  auto at = f.err.find("  stderr    : ");
  ASSERT_NE(at, std::string::npos) << f.err;
  std::string path = f.err.substr(at + 14, f.err.find('\n', at) - at - 14);
  EXPECT_EQ(read_file(path), "gone\n") << path;
  EXPECT_EQ(f.err.find("  stdout    : "), std::string::npos) << "stdout was not redirected";
}

}  // namespace
}  // namespace ddprun::test
