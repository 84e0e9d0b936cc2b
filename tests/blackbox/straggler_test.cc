// Straggler detection between real agents: with --straggler_action=exclude, the node
// whose worker works ten times as long per step as the others' leaves the job, and the
// others go on in a new round of their own. (A threshold of 3: a loaded machine that
// stretches the others' 20 ms sleeps never makes them the stragglers.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "tests/blackbox/ddprun_process.h"
#include "tests/blackbox/elastic_job.h"

namespace ddprun::test {
namespace {

const std::map<std::string, std::optional<std::string>> kEnv{{"OMP_NUM_THREADS", "1"}};

TEST(Stragglers, ExcludeLeavesTheSlowNodeOutAndTheOthersGoOn) {
  Job job;
  job.nnodes = "2:3";
  std::string root = make_temp_dir();
  std::string stop = root + "/stop";
  auto agent = [&](const std::string& name, int own_ms, std::optional<bool> host) {
    std::string dir = root + "/" + name;
    std::filesystem::create_directories(dir);
    return std::make_unique<DdprunProcess>(
        job.agent({"--no_tracking", "--straggler_window=0.5", "--straggler_threshold=3",
                   "--straggler_action=exclude"},
                  {"steps", dir, stop, std::to_string(own_ms)}, host),
        kEnv);
  };
  auto a = agent("a", 20, true);
  auto b = agent("b", 20, false);
  auto c = agent("c", 200, false);
  // c's node is named and leaves; a and b form a round of two without it.
  EXPECT_EQ(c->wait(), 123) << c->err();
  EXPECT_NE(c->err().find("this node was dropped from the job (straggler node "), std::string::npos)
      << c->err();
  EXPECT_NE(c->err().find(") left out: its ranks' own work per step was "), std::string::npos)
      << c->err();
  ASSERT_TRUE(eventually([&] {
    return !markers(root + "/a", 2).empty() && !markers(root + "/b", 2).empty();
  }, std::chrono::seconds(30))) << a->err_so_far() << b->err_so_far();
  std::string said = a->err_so_far() + b->err_so_far();
  EXPECT_NE(said.find("leaves the job (--straggler_action=exclude)"), std::string::npos) << said;
  EXPECT_NE(said.find("membership changed (straggler node"), std::string::npos) << said;
  std::ofstream(stop) << "stop\n";
  EXPECT_EQ(a->wait(), 0) << a->err();
  EXPECT_EQ(b->wait(), 0) << b->err();
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace ddprun::test
