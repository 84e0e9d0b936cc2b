// LocalAgent driven through fakes: no process, no socket, no real time. Each test
// scripts the workers' exits (and the other nodes) and checks what the agent did.
#include <signal.h>

#include <thread>

#include <gtest/gtest.h>

#include "tests/fakes/log_capture.h"
#include "tests/unit/local_agent_fixture.h"

namespace ddprun::testing {
namespace {

using rendezvous::RoundEnd;

TEST_F(LocalAgentTest, SucceedsWhenEveryWorkerExitsZero) {
  launcher_.on_spawn = [&](const auto& p) { launcher_.exit(p.pid, 0); };
  EXPECT_EQ(run(), 0);
  ASSERT_EQ(launcher_.spawned().size(), 2u);
  EXPECT_EQ(launcher_.spawned()[0].rank(), 0);
  EXPECT_EQ(launcher_.spawned()[1].rank(), 1);
  EXPECT_EQ(launcher_.spawned()[1].env("WORLD_SIZE"), "2");
  EXPECT_TRUE(journal_->finished_job);
  EXPECT_TRUE(round(0)->node_finished);
  EXPECT_FALSE(round(0)->written) << "a successful round needs no end";
  EXPECT_EQ(launcher_.leftover_kills.size(), 1u) << "what workers left behind is killed";
}

// Making the rendezvous (connecting to its store) and every join run on the agent's
// loop, whatever the job: no helper thread.
TEST_F(LocalAgentTest, TheRendezvousIsMadeAndJoinedOnTheLoop) {
  launcher_.on_spawn = [&](const auto& p) { launcher_.exit(p.pid, 0); };
  std::vector<std::thread::id> joined_on;
  journal_->on_join = [&] { joined_on.push_back(std::this_thread::get_id()); };
  EXPECT_EQ(run(), 0);
  EXPECT_EQ(made_on_, std::this_thread::get_id());
  ASSERT_EQ(joined_on.size(), 1u);
  EXPECT_EQ(joined_on[0], std::this_thread::get_id());
}

// A stop signal while the rendezvous store is still awaited (not up yet) cancels that
// wait on the loop: ddprun ends with 128+signal, having joined nothing.
TEST_F(LocalAgentTest, ASignalCancelsAWaitForTheRendezvousStore) {
  elastic({{"a", "b"}}, 2);
  connect_waits_ = true;
  std::vector<std::thread::id> joined_on;
  journal_->on_join = [&] { joined_on.push_back(std::this_thread::get_id()); };
  boost::asio::post(io_, [this] { signals_.deliver(SIGTERM); });
  EXPECT_EQ(run(), 128 + SIGTERM);
  EXPECT_TRUE(joined_on.empty());
  EXPECT_TRUE(launcher_.spawned().empty());
}

// A stop signal while the other nodes are awaited cancels the join on the loop: its
// wait ends at once, no worker starts, and ddprun ends with 128+signal.
TEST_F(LocalAgentTest, ASignalCancelsAWaitingJoin) {
  elastic({{"a", "b"}}, 2);
  journal_->join_waits = true;
  journal_->on_join = [this] { signals_.deliver(SIGTERM); };  // comes while the join waits
  EXPECT_EQ(run(), 128 + SIGTERM);
  EXPECT_TRUE(journal_->cancelled);
  EXPECT_TRUE(launcher_.spawned().empty());
}

TEST_F(LocalAgentTest, FirstFailureStopsTheOthersWhenNoRestartIsLeft) {
  launcher_.on_spawn = [&](const auto& p) {
    if (p.rank() == 0) launcher_.exit(p.pid, 3);
  };
  EXPECT_EQ(run(), 3);
  ASSERT_EQ(launcher_.spawned().size(), 2u) << "no restart";
  EXPECT_EQ(launcher_.spawned()[1].signals, std::vector<int>{SIGTERM});
  ASSERT_TRUE(round(0)->written);
  EXPECT_EQ(round(0)->written->kind, RoundEnd::Kind::kFinal);
  EXPECT_EQ(round(0)->written->exitcode, 3);
  EXPECT_TRUE(round(0)->next_rounds.empty());
  EXPECT_FALSE(journal_->finished_job);
}

TEST_F(LocalAgentTest, RestartsWithinTheBudget) {
  config_.spec.max_restarts = 2;
  launcher_.on_spawn = [&](const auto& p) {
    launcher_.exit(p.pid, p.restart_count() == 0 && p.rank() == 1 ? 1 : 0);
  };
  EXPECT_EQ(run(), 0);
  EXPECT_EQ(attempt(0).size(), 2u);
  EXPECT_EQ(attempt(1).size(), 2u) << "the whole group restarts once";
  EXPECT_EQ(launcher_.spawned().size(), 4u);
  ASSERT_TRUE(round(0)->written);
  EXPECT_EQ(round(0)->written->kind, RoundEnd::Kind::kRestart);
  ASSERT_EQ(round(0)->next_rounds.size(), 1u);
  EXPECT_TRUE(round(0)->next_rounds[0].first) << "a failure counts as a restart";
  // Told the round is over, the others find the next one forming.
  EXPECT_EQ(round(0)->asked, (std::vector<std::string>{"note_failure", "start_next_round", "end"}));
}

TEST_F(LocalAgentTest, SpentBudgetEndsTheJobWithTheRootCause) {
  config_.spec.max_restarts = 1;
  launcher_.on_spawn = [&](const auto& p) { launcher_.exit(p.pid, p.rank() == 0 ? 7 : 0); };
  EXPECT_EQ(run(), 7);
  EXPECT_EQ(attempt(0).size(), 2u);
  EXPECT_EQ(attempt(1).size(), 2u);
  EXPECT_EQ(launcher_.spawned().size(), 4u) << "one restart, then no more";
  EXPECT_EQ(round(1)->written->kind, RoundEnd::Kind::kFinal);
}

TEST_F(LocalAgentTest, ExitsInAnyOrder) {
  // Rank 1 succeeds first; rank 0 fails later: still a failure of the job.
  launcher_.on_spawn = [&](const auto& p) {
    if (p.rank() == 1) {
      launcher_.exit(p.pid, 0);
      boost::asio::post(
          io_, [&, rank0 = launcher_.spawned()[0].pid] { launcher_.exit(rank0, -SIGSEGV); });
    }
  };
  EXPECT_EQ(run(), 128 + SIGSEGV);
  EXPECT_TRUE(launcher_.spawned()[1].signals.empty()) << "nothing left to stop";
}

TEST_F(LocalAgentTest, ExitsNoticedTogetherAreJudgedTogether) {
  launcher_.on_spawn = [&](const auto& p) {
    if (p.rank() == 1) launcher_.exit({{launcher_.spawned()[0].pid, 4}, {p.pid, 5}});
  };
  EXPECT_EQ(run(), 4) << "the root cause is the first of the batch";
  EXPECT_TRUE(launcher_.spawned()[1].signals.empty()) << "it had already failed";
}

TEST_F(LocalAgentTest, GracePeriodExpiryKills) {
  launcher_.ignored = {SIGTERM};
  launcher_.on_spawn = [&](const auto& p) {
    if (p.rank() != 0) return;
    launcher_.exit(p.pid, 1);
    boost::asio::post(io_, [&] {
      clock_.advance(config_.grace_period - 1ms);
      EXPECT_EQ(launcher_.spawned()[1].signals, std::vector<int>{SIGTERM}) << "not yet";
      clock_.advance(1ms);
    });
  };
  EXPECT_EQ(run(), 1);
  EXPECT_EQ(launcher_.spawned()[1].signals, (std::vector<int>{SIGTERM, SIGKILL}));
}

TEST_F(LocalAgentTest, ForwardsAStopSignalToEveryWorker) {
  launcher_.on_spawn = [&](const auto& p) {
    if (p.rank() == 1) signals_.deliver(SIGINT);
  };
  EXPECT_EQ(run(), 128 + SIGINT);
  for (const auto& p : launcher_.spawned()) EXPECT_EQ(p.signals, std::vector<int>{SIGINT});
  ASSERT_TRUE(round(0)->written);
  EXPECT_EQ(round(0)->written->kind, RoundEnd::Kind::kFinal) << "the other nodes stop too";
  EXPECT_NE(round(0)->written->reason.find("received SIGINT"), std::string::npos);
  EXPECT_TRUE(round(0)->written->signalled) << "every node's run ends killed";
  EXPECT_EQ(launcher_.spawned().size(), 2u) << "a signal never restarts";
}

// A stop signal's end is told to a store that takes it but never answers (its host
// froze): the job still ends at once, killed, rather than after the store's call timeout.
TEST_F(LocalAgentTest, AStopSignalsLastWordsToAFrozenStoreAreBounded) {
  elastic({{"a", "b"}}, 2);
  launcher_.on_spawn = [&](const auto& p) {
    if (p.rank() != 1) return;
    round(0)->end_unanswered = true;
    signals_.deliver(SIGINT);
    boost::asio::post(io_, [this] { clock_.advance(3s); });  // after the signal was handled
  };
  EXPECT_EQ(run(), 128 + SIGINT);
  ASSERT_TRUE(round(0)->written);
  EXPECT_TRUE(round(0)->written->signalled) << round(0)->written->reason;
}

// scancel signals every process of the step at once: a worker may die of it before
// ddprun gets its own copy. The other nodes must not hear of a failed rank then.
TEST_F(LocalAgentTest, AWorkerKilledByAStopSignalJustBeforeDdprunIsNoFailureToTheOthers) {
  elastic({{"a", "b"}}, 2);
  launcher_.on_spawn = [&](const auto& p) {
    if (p.rank() != 1) return;
    launcher_.exit(attempt(0)[0].pid, -SIGTERM);
    boost::asio::post(io_, [this] { signals_.deliver(SIGTERM); });  // after the exit was handled
  };
  EXPECT_EQ(run(), 128 + SIGTERM);
  ASSERT_TRUE(round(0)->written);
  EXPECT_TRUE(round(0)->written->signalled) << round(0)->written->reason;
  EXPECT_EQ(round(0)->written->reason.find("exited with"), std::string::npos);
}

// ... and without ddprun's own copy, it is a failure like any other, told a moment later.
TEST_F(LocalAgentTest, AWorkerKilledByAStopSignalAloneIsAFailureAfterAMoment) {
  elastic({{"a", "b"}}, 2);
  launcher_.on_spawn = [&](const auto& p) {
    if (p.rank() != 1) return;
    launcher_.exit(attempt(0)[0].pid, -SIGTERM);
    boost::asio::post(io_, [this] {
      EXPECT_FALSE(round(0)->written) << "not told yet";
      clock_.advance(200ms);
      ASSERT_TRUE(round(0)->written);
      EXPECT_NE(round(0)->written->reason.find("rank 0 (local_rank 0) on node 0 (vm) exited "
                                               "with -15"),
                std::string::npos)
          << round(0)->written->reason;
    });
  };
  EXPECT_EQ(run(), 128 + SIGTERM);
  EXPECT_FALSE(round(0)->written->signalled);
}

TEST_F(LocalAgentTest, SignalAsTheRoundCompletesStartsNoWorker) {
  elastic({{"a", "b"}}, 2);
  journal_->on_join = [this] { signals_.deliver(SIGTERM); };  // lands while the join returns
  EXPECT_EQ(run(), 128 + SIGTERM);
  EXPECT_TRUE(launcher_.spawned().empty()) << "no worker may start after a stop signal";
}

TEST_F(LocalAgentTest, SecondSignalKillsAtOnce) {
  launcher_.ignored = {SIGTERM};
  launcher_.on_spawn = [&](const auto& p) {
    if (p.rank() == 1) signals_.deliver(SIGTERM);
  };
  launcher_.on_signal = [&](const auto& p, int sig) {
    if (sig == SIGTERM && p.rank() == 1) signals_.deliver(SIGTERM);
  };
  EXPECT_EQ(run(), 128 + SIGTERM);
  EXPECT_EQ(clock_.now(), 0ms) << "no grace period was waited for";
  for (const auto& p : launcher_.spawned()) {
    EXPECT_EQ(p.signals, (std::vector<int>{SIGTERM, SIGKILL}));
  }
}

TEST_F(LocalAgentTest, LostMemberShrinksTheJobWithoutARestart) {
  elastic({{"a", "b"}, {"a"}}, 1);
  config_.spec.max_restarts = 0;
  launcher_.on_spawn = [&](const auto& p) {
    if (journal_->rounds.size() == 1) {
      if (p.rank() == 1) round(0)->report_dead({"b"});
    } else {
      launcher_.exit(p.pid, 0);
    }
  };
  EXPECT_EQ(run(), 0);
  ASSERT_EQ(journal_->rounds.size(), 2u);
  EXPECT_EQ(round(0)->written->kind, RoundEnd::Kind::kMembership);
  ASSERT_EQ(round(0)->next_rounds.size(), 1u);
  EXPECT_FALSE(round(0)->next_rounds[0].first) << "a lost node is no restart";
  EXPECT_EQ(round(0)->next_rounds[0].second, std::set<std::string>{"b"});
  EXPECT_EQ(round(0)->asked, (std::vector<std::string>{"start_next_round", "end"}))
      << "the next round begins before the others are told";
  EXPECT_EQ(round(0)->written->dropped, std::vector<std::string>{"b"}) << "b learns it was dropped";
  EXPECT_EQ(attempt(0).size(), 4u) << "two groups of the first round's world (4 workers)";
  auto later = launcher_.spawned();
  ASSERT_EQ(later.size(), 4u);
  EXPECT_EQ(later[2].env("WORLD_SIZE"), "2") << "the second round has one node";
  EXPECT_EQ(later[0].env("WORLD_SIZE"), "4");
}

TEST_F(LocalAgentTest, DroppedNodeStopsItsWorkersAndLeaves) {
  elastic({{"a", "b"}}, 1);  // this node is "a"
  config_.spec.max_restarts = 3;
  launcher_.on_spawn = [&](const auto& p) {
    if (p.rank() != 1) return;
    RoundEnd end{RoundEnd::Kind::kMembership, 0, "lost node(s) a"};
    end.dropped = {"a"};
    round(0)->end_by_other(end);  // as read when this node resumes after a freeze
  };
  EXPECT_EQ(run(), agent::kDroppedExitCode);
  for (const auto& p : launcher_.spawned()) EXPECT_EQ(p.signals, std::vector<int>{SIGTERM});
  EXPECT_EQ(journal_->rounds.size(), 1u) << "a dropped node does not join again";
}

TEST_F(LocalAgentTest, NodeNotDroppedGoesOnAfterAMembershipChange) {
  elastic({{"a", "b"}, {"a"}}, 1);
  launcher_.on_spawn = [&](const auto& p) {
    if (journal_->rounds.size() > 1) return finish_with_the_others(p);
    if (p.rank() != 1) return;
    RoundEnd end{RoundEnd::Kind::kMembership, 0, "lost node(s) b"};
    end.dropped = {"b"};
    round(0)->end_by_other(end);
  };
  EXPECT_EQ(run(), 0);
  EXPECT_EQ(journal_->rounds.size(), 2u);
}

TEST(RoundEndEncoding, KindHangAndDroppedNodesSurviveTheStore) {
  RoundEnd end{RoundEnd::Kind::kMembership, 0, "lost node(s) 10.0.0.2/0000000042/2345 | x"};
  end.hang = true;
  end.dropped = {"10.0.0.2/0000000042/2345", "fe80::1/0000000043/2346"};
  EXPECT_EQ(end.encode(),
            "membership+hang+dropped=10.0.0.2/0000000042/2345,fe80::1/0000000043/2346|0|"
            "lost node(s) 10.0.0.2/0000000042/2345 | x");
  RoundEnd back = RoundEnd::parse(end.encode());
  EXPECT_EQ(back.kind, RoundEnd::Kind::kMembership);
  EXPECT_TRUE(back.hang);
  EXPECT_EQ(back.dropped, end.dropped);
  EXPECT_EQ(back.reason, end.reason);
  EXPECT_FALSE(back.signalled);
  EXPECT_TRUE(back.next_round.empty()) << "no next round said";
  end.next_round = "4.17.9.0.0";
  EXPECT_EQ(RoundEnd::parse(end.encode()).next_round, "4.17.9.0.0");
  EXPECT_EQ(RoundEnd::parse(end.encode()).dropped, end.dropped);
  RoundEnd stopped{RoundEnd::Kind::kFinal, 143, "node 1 (h) received SIGTERM"};
  stopped.signalled = true;
  EXPECT_EQ(stopped.encode(), "final+signalled|143|node 1 (h) received SIGTERM");
  EXPECT_TRUE(RoundEnd::parse(stopped.encode()).signalled);
  RoundEnd plain = RoundEnd::parse("restart|3|rank 1 failed");
  EXPECT_EQ(plain.kind, RoundEnd::Kind::kRestart);
  EXPECT_FALSE(plain.hang);
  EXPECT_TRUE(plain.dropped.empty());
  EXPECT_EQ(plain.exitcode, 3);
  EXPECT_EQ(RoundEnd::parse("garbage").kind, RoundEnd::Kind::kFinal);
}

// Fewer members than MIN are left, but a spare waits: it counts towards MIN (read from
// the store on the loop), and the others go on in a new round with it.
TEST_F(LocalAgentTest, ASpareWaitingCountsTowardsMinWhenAMemberIsLost) {
  elastic({{"a", "b", "c"}, {"a", "b", "s"}}, 3);
  journal_->spares_waiting = {"s"};
  config_.spec.max_restarts = 0;
  launcher_.on_spawn = [&](const auto& p) {
    if (journal_->rounds.size() == 1) {
      if (p.rank() == 1) round(0)->report_dead({"c"});
    } else {
      finish_with_the_others(p);
    }
  };
  EXPECT_EQ(run(), 0);
  ASSERT_EQ(journal_->rounds.size(), 2u);
  EXPECT_EQ(round(0)->written->kind, RoundEnd::Kind::kMembership);
  EXPECT_NE(round(0)->written->reason.find("lost node(s) c; 1 spare(s) waiting"), std::string::npos)
      << round(0)->written->reason;
  ASSERT_EQ(round(0)->next_rounds.size(), 1u);
  EXPECT_EQ(round(0)->next_rounds[0].second, (std::set<std::string>{"c"}));
}

TEST_F(LocalAgentTest, TooFewMembersLeftEndsTheJob) {
  elastic({{"a", "b", "c"}}, 3);
  launcher_.on_spawn = [&](const auto& p) {
    if (p.rank() == 1) round(0)->report_dead({"b", "c"});
  };
  EXPECT_EQ(run(), 1);
  EXPECT_EQ(round(0)->written->kind, RoundEnd::Kind::kFinal);
  EXPECT_NE(round(0)->written->reason.find("lost node(s) b, c: 1 node(s) left, at least 3"),
            std::string::npos)
      << round(0)->written->reason;
  EXPECT_TRUE(round(0)->next_rounds.empty());
}

TEST_F(LocalAgentTest, RoundEndedElsewhereRestartsThisNodeToo) {
  elastic({{"a", "b"}}, 2);
  config_.spec.max_restarts = 1;
  launcher_.on_spawn = [&](const auto& p) {
    if (p.restart_count() == 1) return finish_with_the_others(p);
    if (p.rank() == 1) round(0)->end_by_other({RoundEnd::Kind::kRestart, 1, "rank 3 failed"});
  };
  launcher_.on_signal = [&](const auto&, int) {
    // The other node began the next round: it counts as a restart for everyone.
    if (journal_->restarts == 0) journal_->restarts = 1;
  };
  EXPECT_EQ(run(), 0);
  for (const auto& p : attempt(0)) EXPECT_EQ(p.signals, std::vector<int>{SIGTERM});
  EXPECT_EQ(attempt(1).size(), 2u);
}

TEST_F(LocalAgentTest, LostStoreStopsTheWorkers) {
  elastic({{"a", "b"}}, 2);
  launcher_.on_spawn = [&](const auto& p) {
    if (p.rank() == 1) round(0)->lose_store("lost the rendezvous store at h:1 (reset)");
  };
  EXPECT_EQ(run(), 1);
  for (const auto& p : launcher_.spawned()) EXPECT_EQ(p.signals, std::vector<int>{SIGTERM});
}

TEST_F(LocalAgentTest, FinishedNodeWaitsForTheOthers) {
  elastic({{"a", "b"}}, 2);
  launcher_.on_spawn = [&](const auto& p) {
    launcher_.exit(p.pid, 0);
    if (p.rank() == 1) {
      round(0)->on_node_finished = [&] {
        EXPECT_FALSE(journal_->finished_job) << "not before every node is done";
        round(0)->all_done();
      };
    }
  };
  EXPECT_EQ(run(), 0);
  EXPECT_TRUE(round(0)->node_finished);
  EXPECT_TRUE(journal_->finished_job);
}

// A member lost while this node, its workers done, waits for the others is still
// found: the round ends without it and the job goes on, instead of waiting for it for
// ever (its ranks never finished).
TEST_F(LocalAgentTest, AMemberLostWhileThisNodeWaitsForTheOthersEndsTheRound) {
  elastic({{"a", "b"}, {"a"}}, 1);
  config_.spec.max_restarts = 0;
  launcher_.on_spawn = [&](const auto& p) {
    if (journal_->rounds.size() > 1) return finish_with_the_others(p);
    launcher_.exit(p.pid, 0);
    round(0)->on_node_finished = [&] { round(0)->report_dead({"b"}); };
  };
  EXPECT_EQ(run(), 0);
  ASSERT_EQ(journal_->rounds.size(), 2u) << "a round without b";
  EXPECT_EQ(round(0)->written->kind, RoundEnd::Kind::kMembership);
  EXPECT_EQ(round(0)->written->dropped, std::vector<std::string>{"b"});
}

TEST_F(LocalAgentTest, FinishedNodeRestartsWhenAnotherFailsLater) {
  elastic({{"a", "b"}}, 2);
  config_.spec.max_restarts = 1;
  launcher_.on_spawn = [&](const auto& p) {
    if (p.restart_count() == 1) return finish_with_the_others(p);
    launcher_.exit(p.pid, 0);
    if (p.rank() == 1) {
      journal_->restarts = 1;
      round(0)->end_by_other({RoundEnd::Kind::kRestart, 1, "rank 2 on node 1 exited with 1"});
    }
  };
  EXPECT_EQ(run(), 0);
  EXPECT_EQ(attempt(1).size(), 2u) << "this node's workers run again";
}

// The job-wide side of the straggler warning: this node's ranks all succeeded, another
// node's have not finished long after.
TEST_F(LocalAgentTest, ANodeStillRunningLongAfterThisOneFinishedIsNamed) {
  LogCapture log;
  config_.hang.straggler_warning = 300s;
  finish_while_another_node_runs([this, &log] {
    clock_.advance(299s);
    EXPECT_EQ(log.text().find("still running"), std::string::npos);
    clock_.advance(2s);
  });
  EXPECT_EQ(run(), 0);
  EXPECT_NE(log.text().find("node(s) 1 (b) still running 300 s after every rank of this node "
                            "exited 0"),
            std::string::npos)
      << log.text();
}

TEST_F(LocalAgentTest, NoNodeIsNamedWhenTheWarningIsOff) {
  LogCapture log;
  config_.hang.straggler_warning = 0s;
  finish_while_another_node_runs([this] { clock_.advance(std::chrono::hours(24)); });
  EXPECT_EQ(run(), 0);
  EXPECT_EQ(log.text().find("still running"), std::string::npos) << log.text();
}

}  // namespace
}  // namespace ddprun::testing

namespace ddprun::testing {
namespace {

TEST_F(LocalAgentTest, AJobThatFailsForGoodClosesItsRendezvousAsFailedAndNamesWhoIsOut) {
  journal_->quarantined = {{"10.0.0.9", 4'000'000'000'000, "2 failure(s) of its workers"}};
  launcher_.on_spawn = [&](const auto& p) { launcher_.exit(p.pid, 1); };
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run(), 1);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(journal_->job_failed) << "spares waiting leave";
  EXPECT_FALSE(journal_->finished_job);
  EXPECT_NE(err.find("ddprun: quarantined: 10.0.0.9 until "), std::string::npos) << err;
  EXPECT_NE(err.find("(2 failure(s) of its workers)"), std::string::npos) << err;
}

}  // namespace
}  // namespace ddprun::testing
