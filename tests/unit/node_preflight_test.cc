// This node's preflight as a component, over a fake probe: what it finds before a
// join, when the site's check runs, and the clock's verdict.
#include "common/coro.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include "agent/preflight/node_preflight.h"
#include "tests/fakes/fake_node_probe.h"

namespace ddprun::agent {
namespace {

using namespace std::chrono_literals;

class NodePreflightTest : public ::testing::Test {
 protected:
  std::vector<Finding> findings(const std::vector<std::string>& left_behind, bool first) {
    std::vector<Finding> out;
    std::exception_ptr error;
    CancelSignal cancel;
    boost::asio::co_spawn(io_, preflight_.findings(left_behind, first, cancel),
                          [&](std::exception_ptr e, std::vector<Finding> f) {
                            error = e;
                            out = std::move(f);
                          });
    io_.run();
    io_.restart();
    EXPECT_FALSE(error);
    return out;
  }

  boost::asio::io_context io_;
  PreflightOptions options_;
  testing::FakeNodeProbe probe_;
  NodePreflight preflight_{options_, &probe_, "node-a"};
};

TEST_F(NodePreflightTest, AHealthyNodeIsFit) { EXPECT_TRUE(findings({}, true).empty()); }

TEST_F(NodePreflightTest, AWorkerLeftBehindMakesTheNodeUnfit) {
  auto found = findings({"rank 1 (pid 7, D: nfs_wait)"}, false);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].check, "workers");
  EXPECT_NE(found[0].problem.find("could not be killed"), std::string::npos);
}

TEST_F(NodePreflightTest, TheSitesCheckRunsBeforeTheFirstJoinOnly) {
  options_.health_command = "echo broken fan; exit 3";
  EXPECT_EQ(findings({}, false).size(), 0u);  // a restart never waits for it
  auto found = findings({}, true);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].problem.find("broken fan"), std::string::npos);
}

TEST_F(NodePreflightTest, TheClockIsFineOrWarnedOfOrUnfit) {
  EXPECT_TRUE(preflight_.checks_clock());
  EXPECT_FALSE(preflight_.clock(std::nullopt));
  EXPECT_FALSE(preflight_.clock(100ms));
  EXPECT_FALSE(preflight_.clock(-2s));  // said as a warning only
  auto far = preflight_.clock(-6s);
  ASSERT_TRUE(far);
  EXPECT_EQ(far->check, "clock");
  EXPECT_NE(far->problem.find("6000 ms ahead of"), std::string::npos);
}

TEST_F(NodePreflightTest, TheCauseNamesTheHostAndEveryFinding) {
  std::string cause = preflight_.say_unfit({{"shm", "too small"}, {"disk", "full"}});
  EXPECT_EQ(cause, "preflight failed on node-a; shm: too small; disk: full");
}

}  // namespace
}  // namespace ddprun::agent
