// The examples as users run them: the C++ store/tracking example on one and two nodes,
// and a program that knows nothing of ddprun.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/blackbox/ddprun_process.h"

namespace ddprun::test {
namespace {

const std::map<std::string, std::optional<std::string>> kEnv{{"OMP_NUM_THREADS", "1"}};

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(CppCpuExample, OneNodeGathersEveryRankAndLogsToTheRun) {
  std::string runs = make_temp_dir() + "/runs";
  Finished f = run_ddprun({"--nproc_per_node=3", "--rdzv_id=cpu1", "--tracking_dir", runs,
                           "--no_python", DDPRUN_CPP_CPU},
                          kEnv);
  ASSERT_EQ(f.code, 0) << f.err;
  EXPECT_EQ(count(f.out, "/3: all-gather sum 5 ok"), 3u) << f.out;  // 0 + 1 + 4
  Finished csv = run_ddprun({"runs", "export", "cpu1", "--format", "csv", "--tracking_dir", runs});
  for (int rank = 0; rank < 3; ++rank) {
    auto rows = csv_points(csv.out, "0," + std::to_string(rank) + ",0,");
    ASSERT_EQ(rows.size(), 2u) << csv.out;  // gathered_sum and ok
    EXPECT_TRUE(std::any_of(rows.begin(), rows.end(), [](const std::string& r) {
      return r.find(",gathered_sum,5") != std::string::npos;
    })) << csv.out;
  }
}

TEST(CppCpuExample, TwoStaticNodesGatherAllFourRanks) {
  std::string runs = make_temp_dir() + "/runs";
  int port = free_port();
  auto node = [&](int k) {
    return std::vector<std::string>{"--nnodes=2",
                                    "--node_rank=" + std::to_string(k),
                                    "--master_addr=127.0.0.1",
                                    "--master_port=" + std::to_string(port),
                                    "--nproc_per_node=2",
                                    "--rdzv_id=cpu2",
                                    "--tracking_dir",
                                    runs,
                                    "--no_python",
                                    DDPRUN_CPP_CPU};
  };
  DdprunProcess a(node(0), kEnv);
  DdprunProcess b(node(1), kEnv);
  ASSERT_EQ(a.wait(), 0) << a.err();
  ASSERT_EQ(b.wait(), 0) << b.err();
  EXPECT_EQ(count(a.out() + b.out(), "/4: all-gather sum 14 ok"), 4u) << a.out() << b.out();
  Finished csv = run_ddprun({"runs", "export", "cpu2", "--format", "csv", "--tracking_dir", runs});
  EXPECT_EQ(count(csv.out, ",gathered_sum,14"), 4u) << "one run holds both nodes' ranks\n"
                                                    << csv.out;
}

TEST(ExistingBinaryExample, GetsTheEnvironmentAndItsDeviceOnTheCommandLine) {
  Finished f = run_ddprun(
      {"--standalone", "--nproc_per_node=2", "--no_python",
       DDPRUN_SOURCE_DIR "/examples/existing_binary/report_rank.sh", "--device", "${local_rank}"},
      kEnv);
  ASSERT_EQ(f.code, 0) << f.err;
  EXPECT_NE(f.out.find("rank 0 of 2, local rank 0 on device 0, store at 127.0.0.1:"),
            std::string::npos)
      << f.out;
  EXPECT_NE(f.out.find("rank 1 of 2, local rank 1 on device 1, store at 127.0.0.1:"),
            std::string::npos)
      << f.out;
}

}  // namespace
}  // namespace ddprun::test
