// The agent's metrics component over fakes: what a scrape serves (the agent's figures
// with the endpoint's own look at the ranks' steps) and the discovery list it keeps
// with --metrics_sd_file.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "agent/metrics/metrics_endpoint.h"
#include "common/error.h"
#include "tests/fakes/fake_rendezvous.h"
#include "tests/fakes/fake_worker_progress.h"
#include "tests/fakes/manual_clock.h"

namespace ddprun::agent {
namespace {

using namespace std::chrono_literals;

class MetricsEndpointTest : public ::testing::Test {
 protected:
  MetricsEndpointTest() {
    config_.spec.local_world_size = 2;
    config_.metrics.port = 0;
    config_.run_id = "r1";
  }
  ~MetricsEndpointTest() override { std::filesystem::remove_all(dir_); }

  MetricsEndpoint endpoint() {
    return MetricsEndpoint(io_, config_, workers_, clock_, [] {
      JobMetrics j;
      j.run_id = "r1";
      j.ranks.resize(2);
      j.ranks[1].rank = 7;
      return j;
    });
  }
  std::shared_ptr<testing::FakeRoundJournal> round_journal(int group_rank, int nodes) {
    auto j = std::make_shared<testing::FakeRoundJournal>();
    j->info.group_rank = group_rank;
    j->info.group_world_size = nodes;
    j->io = &io_;
    return j;
  }
  nlohmann::json sd_file() {
    std::ifstream in(config_.metrics.sd_file);
    return nlohmann::json::parse(in);
  }

  AgentConfig config_;
  boost::asio::io_context io_;
  testing::ManualClock clock_;
  testing::FakeWorkerProgress workers_{2};
  std::filesystem::path dir_ = std::filesystem::temp_directory_path() /
                               ("ddprun_metrics_endpoint_" + std::to_string(::getpid()));
};

TEST_F(MetricsEndpointTest, AScrapeServesTheAgentsFiguresWithTheRanksSteps) {
  auto e = endpoint();
  EXPECT_GT(e.port(), 0);  // port 0: one was picked
  e.start_attempt();
  workers_.pages[1].step = 12;
  workers_.pages[1].beats = 1;
  clock_.advance(MetricsEndpoint::kStepLookInterval);  // its look each second
  clock_.advance(3s);
  JobMetrics j = e.now();
  ASSERT_EQ(j.ranks.size(), 2u);
  EXPECT_EQ(j.ranks[1].rank, 7);   // the agent's
  EXPECT_EQ(j.ranks[1].step, 12);  // the endpoint's own
  EXPECT_DOUBLE_EQ(j.ranks[1].seconds_since_progress, 3);
  EXPECT_DOUBLE_EQ(j.ranks[0].seconds_since_progress, 4);  // no progress since its start
}

TEST_F(MetricsEndpointTest, GroupRankZeroListsEveryNodesEndpointForDiscovery) {
  std::filesystem::create_directories(dir_);
  config_.metrics.sd_file = (dir_ / "sd.json").string();
  auto e = endpoint();
  testing::FakeRendezvousJournal rdzv;
  rdzv.others_shared["metrics_endpoint"] = {"10.0.0.2:9100"};
  auto j = round_journal(0, 2);
  testing::FakeRound round(j, rdzv);
  e.share(j->info, "", "h", round);
  io_.poll();
  auto list = sd_file();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["targets"].size(), 2u);
  EXPECT_EQ(list[0]["targets"][1], "10.0.0.2:9100");
  EXPECT_EQ(list[0]["labels"]["ddprun_run_id"], "r1");
}

// Every agent listens on the port it was given (--metrics_port=9464 on every node): a
// spare, known by its id alone, is listed at its address with the label role="spare".
TEST_F(MetricsEndpointTest, SparesAreListedWithTheirRoleWhereEveryAgentHasThePort) {
  std::filesystem::create_directories(dir_);
  config_.metrics.sd_file = (dir_ / "sd.json").string();
  auto e = endpoint();
  config_.metrics.port = e.port();  // as given to every agent
  config_.metrics.host = "0.0.0.0";
  std::string port = std::to_string(e.port());
  testing::FakeRendezvousJournal rdzv;
  rdzv.others_shared["metrics_endpoint"] = {"10.0.0.2:" + port};
  auto j = round_journal(0, 2);
  j->info.spares = {"10.0.0.9/77/29500"};
  testing::FakeRound round(j, rdzv);
  e.share(j->info, "10.0.0.1/1/29500", "h", round);
  io_.poll();
  EXPECT_TRUE(e.lists_targets());
  auto list = sd_file();
  ASSERT_EQ(list.size(), 2u) << list.dump();
  EXPECT_EQ(list[0]["targets"][0], "10.0.0.1:" + port);
  EXPECT_EQ(list[0]["labels"]["role"], "member");
  EXPECT_EQ(list[1]["targets"], nlohmann::json::array({"10.0.0.9:" + port}));
  EXPECT_EQ(list[1]["labels"]["role"], "spare");
  EXPECT_EQ(list[1]["labels"]["ddprun_run_id"], "r1");
  // A spare that arrives while the round runs, and one that takes a place.
  e.spares_changed({"10.0.0.8/5/29500", "10.0.0.9/77/29500"});
  EXPECT_EQ(sd_file()[1]["targets"].size(), 2u);
  e.spares_changed({});
  EXPECT_EQ(sd_file().size(), 1u);
}

TEST_F(MetricsEndpointTest, SparesThatPickedTheirPortAreNotListed) {
  std::filesystem::create_directories(dir_);
  config_.metrics.sd_file = (dir_ / "sd.json").string();
  auto e = endpoint();  // --metrics_port=0: each agent picks its own
  testing::FakeRendezvousJournal rdzv;
  auto j = round_journal(0, 1);
  j->info.spares = {"10.0.0.9/77/29500"};
  testing::FakeRound round(j, rdzv);
  e.share(j->info, "", "h", round);
  EXPECT_EQ(sd_file().size(), 1u);
  EXPECT_EQ(sd_file()[0]["labels"]["role"], "member");
}

TEST_F(MetricsEndpointTest, OtherNodesOnlyShareTheirs) {
  std::filesystem::create_directories(dir_);
  config_.metrics.sd_file = (dir_ / "sd.json").string();
  auto e = endpoint();
  testing::FakeRendezvousJournal rdzv;
  auto j = round_journal(1, 2);
  testing::FakeRound round(j, rdzv);
  e.share(j->info, "", "h", round);
  io_.poll();
  ASSERT_EQ(j->shared.size(), 1u);
  EXPECT_EQ(j->shared[0].second, "127.0.0.1:" + std::to_string(e.port()));
  EXPECT_FALSE(std::filesystem::exists(config_.metrics.sd_file));
}

TEST_F(MetricsEndpointTest, APortInUseIsAUsageErrorNamingTheFlag) {
  auto first = endpoint();
  config_.metrics.port = first.port();
  try {
    endpoint();
    FAIL() << "a second endpoint on the same port";
  } catch (const UsageError& e) {  // exit status 2
    EXPECT_NE(std::string(e.what()).find("--metrics_port=" + std::to_string(first.port())),
              std::string::npos);
  }
}

}  // namespace
}  // namespace ddprun::agent
