// Preflight's link check as a component, over a fake round: when it probes, what it
// shares, what group rank 0 keeps in the run, and a cancel during its wait.
#include "common/coro.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "agent/preflight/link_check.h"
#include "tests/fakes/fake_rendezvous.h"
#include "tests/unit/quiet_observer.h"

namespace ddprun::agent {
namespace {

class LinksObserver : public testing::QuietObserver {
 public:
  void links_probed(int attempt, const std::string& report) override {
    reports.emplace_back(attempt, nlohmann::json::parse(report));
  }
  std::vector<std::pair<int, nlohmann::json>> reports;
};

class LinkCheckTest : public ::testing::Test {
 protected:
  // Members whose workers' stores listen on port 1 of loopback: nothing answers there.
  LinkCheckTest() {
    info_.members = {"127.0.0.1/10/1", "127.0.0.1/11/1"};
    info_.group_world_size = 2;
    info_.restart_count = 4;
  }
  void probe(CancelSignal& cancel) {
    auto j = std::make_shared<testing::FakeRoundJournal>();
    j->info = info_;
    j->io = &io_;
    rounds_.push_back(j);
    auto round = std::make_shared<testing::FakeRound>(j, rdzv_);
    bool done = false;
    std::exception_ptr error;
    boost::asio::co_spawn(io_, check_.probe(info_, *round, cancel), [&](std::exception_ptr e) {
      error = e;
      done = true;
    });
    io_.run();
    io_.restart();
    EXPECT_TRUE(done);
    EXPECT_FALSE(error);
  }

  boost::asio::io_context io_;
  LinksObserver observer_;
  LinkCheck check_{io_, &observer_};
  rendezvous::RendezvousInfo info_;
  testing::FakeRendezvousJournal rdzv_;
  std::vector<std::shared_ptr<testing::FakeRoundJournal>> rounds_;
};

TEST_F(LinkCheckTest, GroupRankZeroProbesItsNeighbourAndTheRunKeepsEveryFigure) {
  CancelSignal cancel;
  rdzv_.others_shared["links"] = {R"({"error":"its own"})"};
  probe(cancel);
  const auto& shared = rounds_[0]->shared;
  ASSERT_EQ(shared.size(), 2u);
  EXPECT_EQ(shared[0].first, "links_ready");
  EXPECT_EQ(shared[1].first, "links");
  // Nothing listens there: the figures carry the error, and no wait is longer.
  EXPECT_NE(nlohmann::json::parse(shared[1].second).value("error", ""), "");
  ASSERT_EQ(observer_.reports.size(), 1u);
  EXPECT_EQ(observer_.reports[0].first, 4);
  EXPECT_EQ(observer_.reports[0].second["probes"].size(), 2u);
}

TEST_F(LinkCheckTest, TheSameMembersAreProbedOnce) {
  CancelSignal cancel;
  probe(cancel);
  probe(cancel);
  EXPECT_TRUE(rounds_[1]->shared.empty());
}

TEST_F(LinkCheckTest, OtherNodesOnlyShareTheirFigures) {
  info_.group_rank = 1;
  CancelSignal cancel;
  probe(cancel);
  ASSERT_EQ(rounds_[0]->shared.size(), 2u);
  EXPECT_TRUE(observer_.reports.empty());
}

TEST_F(LinkCheckTest, ARoundOfFixedNodesOrOfOneIsNotProbed) {
  CancelSignal cancel;
  info_.members = {"0", "1"};  // known by rank only
  probe(cancel);
  info_.members = {"127.0.0.1/10/1"};
  info_.group_world_size = 1;
  probe(cancel);
  EXPECT_TRUE(rounds_[0]->shared.empty());
  EXPECT_TRUE(rounds_[1]->shared.empty());
}

TEST_F(LinkCheckTest, ACancelledCheckProbesNothing) {
  CancelSignal cancel;
  cancel.cancel();
  probe(cancel);
  ASSERT_EQ(rounds_[0]->shared.size(), 1u);  // its readiness only
  EXPECT_TRUE(observer_.reports.empty());
}

}  // namespace
}  // namespace ddprun::agent
