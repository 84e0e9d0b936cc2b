// LocalAgent's preflight driven through fakes: a node unfit before its first join, or
// before a later round, and the clock check against the rendezvous host's.
#include <signal.h>

#include <gtest/gtest.h>

#include "tests/fakes/log_capture.h"
#include "tests/unit/local_agent_fixture.h"

namespace ddprun::testing {
namespace {

// A node that fails its preflight never reaches the rendezvous: no store, no round,
// no worker; it ends with the preflight's exit status.
TEST_F(LocalAgentTest, ANodeThatFailsItsPreflightNeverJoins) {
  node_.shm = 16 * FakeNodeProbe::kMiB;
  EXPECT_EQ(run(), agent::kPreflightExitCode);
  EXPECT_EQ(made_on_, std::thread::id()) << "the rendezvous was made";
  EXPECT_TRUE(journal_->rounds.empty());
  EXPECT_TRUE(launcher_.spawned().empty());
  config_.preflight.checks = {agent::Check::kDisk};  // the shm check left out
  EXPECT_EQ(run(), 0);
}

// A node of a job of several that fails its preflight before its first join reaches
// the others only to tell them why it stays out; it never joins.
TEST_F(LocalAgentTest, ANodeUnfitBeforeItsFirstJoinTellsTheOthersWhy) {
  elastic({{"a", "b"}}, 1);
  node_.shm = 16 * FakeNodeProbe::kMiB;
  EXPECT_EQ(run(), agent::kPreflightExitCode);
  EXPECT_EQ(made_on_, std::thread::id()) << "no rendezvous handler: it never joins";
  EXPECT_TRUE(journal_->rounds.empty());
  EXPECT_NE(journal_->told_unfit.find("preflight failed on "), std::string::npos)
      << journal_->told_unfit;
  EXPECT_NE(journal_->told_unfit.find("shm: "), std::string::npos) << journal_->told_unfit;
}

// Telling the others waits for their store; a stop signal meanwhile ends it at once.
TEST_F(LocalAgentTest, ASignalEndsTellingTheOthersWhyThisNodeIsUnfit) {
  elastic({{"a", "b"}}, 1);
  node_.shm = 16 * FakeNodeProbe::kMiB;
  connect_waits_ = true;
  boost::asio::post(io_, [this] { signals_.deliver(SIGTERM); });
  EXPECT_EQ(run(), 128 + SIGTERM);
  EXPECT_TRUE(journal_->told_unfit.empty());
}

// Each join is preceded by the checks: a node whose disk filled during an attempt
// does not join the next round.
TEST_F(LocalAgentTest, ANodeUnfitBeforeALaterRoundLeavesTheJob) {
  config_.spec.max_restarts = 3;
  config_.preflight.write_dirs = {"/ckpt"};
  launcher_.on_spawn = [&](const auto& p) {
    node_.free["/ckpt"] = 5 * FakeNodeProbe::kMiB;
    launcher_.exit(p.pid, p.rank() == 1 ? 1 : 0);
  };
  EXPECT_EQ(run(), agent::kPreflightExitCode);
  EXPECT_EQ(attempt(0).size(), 2u);
  EXPECT_TRUE(attempt(1).empty()) << "no second attempt on this node";
  EXPECT_EQ(journal_->rounds.size(), 1u);
  EXPECT_NE(journal_->kept_out.find("preflight failed on "), std::string::npos)
      << "the others are told why: " << journal_->kept_out;
  EXPECT_NE(journal_->kept_out.find("disk: /ckpt"), std::string::npos) << journal_->kept_out;
  EXPECT_FALSE(journal_->job_failed) << "the job goes on without this node";
}

TEST_F(LocalAgentTest, ANodeWhoseClockIsFarOffTheRendezvousHostsStaysOut) {
  journal_->clock_offset = std::chrono::milliseconds(-7200);
  EXPECT_EQ(run(), agent::kPreflightExitCode);
  EXPECT_TRUE(journal_->rounds.empty()) << "it never joined";
  EXPECT_NE(journal_->kept_out.find("clock: this node's wall clock is 7200 ms ahead of the "
                                    "rendezvous host's"),
            std::string::npos)
      << journal_->kept_out;
}

TEST_F(LocalAgentTest, ASmallClockOffsetIsOnlySaid) {
  journal_->clock_offset = std::chrono::milliseconds(900);
  launcher_.on_spawn = [&](const auto& p) { launcher_.exit(p.pid, 0); };
  LogCapture log;
  EXPECT_EQ(run(), 0);
  EXPECT_TRUE(journal_->kept_out.empty());
  EXPECT_NE(log.text().find("preflight: clock: this node's wall clock is 900 ms behind"),
            std::string::npos)
      << log.text();
}

TEST_F(LocalAgentTest, TheClockCheckLeftOutLetsAnyClockJoin) {
  config_.preflight.checks = {agent::Check::kDisk};
  journal_->clock_offset = std::chrono::milliseconds(60'000);
  launcher_.on_spawn = [&](const auto& p) { launcher_.exit(p.pid, 0); };
  EXPECT_EQ(run(), 0);
}

// A worker that SIGKILL cannot end (D state: a dead mount, a wedged driver) is left
// behind after a bounded wait, named with its state; its host is unhealthy: the node
// tells the others and leaves the job instead of restarting there.
TEST_F(LocalAgentTest, AWorkerThatCannotBeKilledMakesItsNodeLeaveTheJob) {
  config_.spec.max_restarts = 3;
  launcher_.ignored = {SIGTERM, SIGKILL};
  launcher_.on_spawn = [&](const auto& p) {
    if (p.rank() != 1) return;
    inspector_.states[p.pid] = 'D';
    launcher_.exit(attempt(0).at(0).pid, 1);
    boost::asio::post(io_, [&] {
      clock_.advance(config_.grace_period);  // SIGKILL
      clock_.advance(std::chrono::minutes(1));
    });
  };
  EXPECT_EQ(run(), agent::kPreflightExitCode);
  EXPECT_TRUE(attempt(1).empty()) << "no second attempt on this node";
  EXPECT_NE(journal_->kept_out.find("workers: rank 1 (pid "), std::string::npos)
      << journal_->kept_out;
  EXPECT_NE(journal_->kept_out.find("uninterruptible sleep (D, in fuse_wait)) could not be killed"),
            std::string::npos)
      << journal_->kept_out;
}

}  // namespace
}  // namespace ddprun::testing
