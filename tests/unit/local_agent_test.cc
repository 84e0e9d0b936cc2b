// LocalAgent driven through fakes: no process, no socket, no real time. Each test
// scripts the workers' exits (and the other nodes) and checks what the agent did.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent/local_agent.h"
#include "tests/fakes/fake_process_inspector.h"
#include "tests/fakes/fake_process_launcher.h"
#include "tests/fakes/fake_rendezvous.h"
#include "tests/fakes/log_capture.h"
#include "tests/fakes/manual_clock.h"

namespace ddprun::testing {
namespace {

using namespace std::chrono_literals;
using agent::AgentConfig;
using rendezvous::RoundEnd;

class LocalAgentTest : public ::testing::Test {
 protected:
  LocalAgentTest() {
    config_.spec.local_world_size = 2;
    config_.spec.argv = {"/bin/true"};
    config_.spec.entrypoint_name = "/bin/true";
    config_.grace_period = 30s;
    config_.log_dir = log_base_.string();
  }
  ~LocalAgentTest() override { std::filesystem::remove_all(log_base_); }

  int run() {
    auto handler = std::make_unique<FakeRendezvous>(journal_);
    agent::AgentServices services{
        io_,     launcher_, clock_,     [&handler] { return std::move(handler); },
        nullptr, nullptr,   &inspector_};
    agent::LocalAgent agent(config_, std::move(services));
    return agent.run();
  }

  /// Makes the agent a member of a job of several nodes (this node first).
  void elastic(std::vector<std::vector<std::string>> members, int min_nodes) {
    config_.min_nodes = min_nodes;
    config_.max_nodes = 4;
    journal_->members = std::move(members);
  }

  std::vector<FakeProcessLauncher::Process> attempt(int restart_count) const {
    std::vector<FakeProcessLauncher::Process> out;
    for (const auto& p : launcher_.spawned())
      if (p.restart_count() == restart_count) out.push_back(p);
    return out;
  }
  std::shared_ptr<FakeRoundJournal> round(size_t i) const { return journal_->rounds.at(i); }

  /// The worker succeeds, and so does every other node of its round.
  void finish_with_the_others(const FakeProcessLauncher::Process& p) {
    launcher_.exit(p.pid, 0);
    journal_->rounds.back()->all_done();
  }

  boost::asio::io_context io_;
  FakeProcessLauncher launcher_{io_};
  FakeProcessInspector inspector_{io_};
  ManualClock clock_;
  std::shared_ptr<FakeRendezvousJournal> journal_ = std::make_shared<FakeRendezvousJournal>();
  AgentConfig config_;
  std::filesystem::path log_base_ =
      std::filesystem::temp_directory_path() /
      ("ddprun_agent_test_" + std::to_string(::getpid()) + "_" +
       ::testing::UnitTest::GetInstance()->current_test_info()->name());
};

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
    if (p.rank() == 1) ::raise(SIGINT);
  };
  EXPECT_EQ(run(), 128 + SIGINT);
  for (const auto& p : launcher_.spawned()) EXPECT_EQ(p.signals, std::vector<int>{SIGINT});
  ASSERT_TRUE(round(0)->written);
  EXPECT_EQ(round(0)->written->kind, RoundEnd::Kind::kFinal) << "the other nodes stop too";
  EXPECT_NE(round(0)->written->reason.find("received SIGINT"), std::string::npos);
  EXPECT_TRUE(round(0)->written->signalled) << "every node's run ends killed";
  EXPECT_EQ(launcher_.spawned().size(), 2u) << "a signal never restarts";
}

// scancel signals every process of the step at once: a worker may die of it before
// ddprun gets its own copy. The other nodes must not hear of a failed rank then.
TEST_F(LocalAgentTest, AWorkerKilledByAStopSignalJustBeforeDdprunIsNoFailureToTheOthers) {
  elastic({{"a", "b"}}, 2);
  launcher_.on_spawn = [&](const auto& p) {
    if (p.rank() != 1) return;
    launcher_.exit(attempt(0)[0].pid, -SIGTERM);
    boost::asio::post(io_, [] { ::raise(SIGTERM); });  // after the exit was handled
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
  journal_->on_join = [] { ::raise(SIGTERM); };  // lands while the join returns
  EXPECT_EQ(run(), 128 + SIGTERM);
  EXPECT_TRUE(launcher_.spawned().empty()) << "no worker may start after a stop signal";
}

TEST_F(LocalAgentTest, SecondSignalKillsAtOnce) {
  launcher_.ignored = {SIGTERM};
  launcher_.on_spawn = [&](const auto& p) {
    if (p.rank() == 1) ::raise(SIGTERM);
  };
  launcher_.on_signal = [&](const auto& p, int sig) {
    if (sig == SIGTERM && p.rank() == 1) ::raise(SIGTERM);
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
  EXPECT_EQ(round(0)->next_rounds[0].second, std::set<std::string>{"a"});
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
      boost::asio::post(io_, [&] {
        boost::asio::post(io_, [&] {
          EXPECT_TRUE(round(0)->node_finished);
          EXPECT_FALSE(journal_->finished_job) << "not before every node is done";
          round(0)->all_done();
        });
      });
    }
  };
  EXPECT_EQ(run(), 0);
  EXPECT_TRUE(journal_->finished_job);
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
  elastic({{"a", "b"}}, 2);
  config_.hang.straggler_warning = 300s;
  launcher_.on_spawn = [&](const auto& p) {
    if (p.rank() != 1) return;
    round(0)->unfinished = {1};
    round(0)->on_node_finished = [this, &log] {
      clock_.advance(299s);
      EXPECT_EQ(log.text().find("still running"), std::string::npos);
      clock_.advance(2s);
      round(0)->all_done();
    };
    for (const auto& q : attempt(0)) launcher_.exit(q.pid, 0);
  };
  EXPECT_EQ(run(), 0);
  EXPECT_NE(log.text().find("node(s) 1 (b) still running 300 s after every rank of this node "
                            "exited 0"),
            std::string::npos)
      << log.text();
}

TEST_F(LocalAgentTest, NoNodeIsNamedWhenTheWarningIsOff) {
  LogCapture log;
  elastic({{"a", "b"}}, 2);
  config_.hang.straggler_warning = 0s;
  launcher_.on_spawn = [&](const auto& p) {
    if (p.rank() != 1) return;
    round(0)->unfinished = {1};
    round(0)->on_node_finished = [this] {
      clock_.advance(std::chrono::hours(24));
      round(0)->all_done();
    };
    for (const auto& q : attempt(0)) launcher_.exit(q.pid, 0);
  };
  EXPECT_EQ(run(), 0);
  EXPECT_EQ(log.text().find("still running"), std::string::npos) << log.text();
}

// -- hang detection --

class LocalAgentHangTest : public LocalAgentTest {
 protected:
  LocalAgentHangTest() {
    config_.hang.mode = agent::HangOptions::Mode::kFixed;
    config_.hang.timeout = 5s;
    config_.hang.initial_timeout = 5s;
  }
  /// Workers of these attempts never make progress (time runs on once both started).
  void hang_in_attempts(int below) {
    launcher_.on_spawn = [this, below](const auto& p) {
      if (p.restart_count() >= below) return launcher_.exit(p.pid, 0);
      if (p.rank() == 1) clock_.advance(10s);
    };
  }
};

TEST_F(LocalAgentHangTest, AHangEndsTheRoundOnlyAfterEveryStackIsCaptured) {
  config_.spec.max_restarts = 1;
  inspector_.on_capture = [this](const auto& requests) {
    ASSERT_EQ(requests.size(), 2u);
    for (const auto& r : requests) {
      EXPECT_TRUE(launcher_.process(r.pid).signals.empty()) << "nothing stopped before";
      EXPECT_NE(r.python_dump_file.find("python_stacks.txt"), std::string::npos);
    }
  };
  hang_in_attempts(1);
  EXPECT_EQ(run(), 0);
  ASSERT_EQ(inspector_.captures.size(), 1u);
  for (const auto& p : attempt(0)) EXPECT_EQ(p.signals, std::vector<int>{SIGTERM});
  EXPECT_EQ(attempt(1).size(), 2u) << "restarted";
  ASSERT_TRUE(round(0)->written);
  EXPECT_TRUE(round(0)->written->hang);
  EXPECT_EQ(round(0)->written->kind, RoundEnd::Kind::kRestart);
  EXPECT_EQ(round(0)->written->exitcode, agent::kHangExitCode);
  // This node's reports went to the others, one per worker, with its stack.
  ASSERT_EQ(round(0)->shared.size(), 1u);
  EXPECT_EQ(round(0)->shared[0].first, "hang");
  auto reports = nlohmann::json::parse(round(0)->shared[0].second);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_NE(reports[1]["python_stack"].get<std::string>().find("/job/pid"), std::string::npos);
  // The workers got what the capture needs.
  EXPECT_FALSE(attempt(0)[0].env("DDPRUN_PROGRESS_FILE").empty());
  EXPECT_FALSE(attempt(0)[0].env("DDPRUN_STACK_SIGNAL").empty());
  EXPECT_EQ(attempt(0)[0].env("TORCH_NCCL_DUMP_ON_TIMEOUT"), "1");
}

TEST_F(LocalAgentHangTest, AHangWithNoRestartLeftEndsTheJobWithItsExitCode) {
  hang_in_attempts(1);
  EXPECT_EQ(run(), agent::kHangExitCode);
  EXPECT_EQ(round(0)->written->kind, RoundEnd::Kind::kFinal);
}

TEST_F(LocalAgentHangTest, RestartsThatGetNowhereEndWithTheNoProgressExitCode) {
  config_.spec.max_restarts = 10;
  config_.hang.max_no_progress_restarts = 2;
  hang_in_attempts(100);
  EXPECT_EQ(run(), agent::kNoProgressExitCode);
  EXPECT_EQ(inspector_.captures.size(), 3u) << "the first hang, then two without progress";
  EXPECT_TRUE(attempt(3).empty());
}

TEST_F(LocalAgentHangTest, AHangOnAnotherNodeCapturesHereToo) {
  elastic({{"a", "b"}}, 2);
  config_.spec.max_restarts = 0;
  launcher_.on_spawn = [this](const auto& p) {
    if (p.rank() != 1) return;
    round(0)->end_by_other({RoundEnd::Kind::kFinal, agent::kHangExitCode, "hang: on b", true});
  };
  EXPECT_EQ(run(), agent::kHangExitCode);
  EXPECT_EQ(inspector_.captures.size(), 1u);
  ASSERT_EQ(round(0)->shared.size(), 1u);
}

// Auto mode: both workers step every second for 4 s, then rank 1 goes quiet for 8 s
// (rank 0 stepping on) and both succeed. Learned on this node alone the timeout is
// 5 s (5 x 1 s).
class LocalAgentAutoHangTest : public LocalAgentHangTest {
 protected:
  LocalAgentAutoHangTest() {
    config_.hang.mode = agent::HangOptions::Mode::kAuto;
    config_.hang.initial_timeout = 100s;
    config_.hang.factor = 5;
    config_.hang.min_timeout = 1s;
    launcher_.on_spawn = [this](const auto& p) {
      if (p.rank() != 1) return;
      auto workers = attempt(0);
      for (int step = 0; step < 4; ++step) {
        for (const auto& w : workers) beat(w);
        clock_.advance(1s);
      }
      for (int step = 0; step < 8; ++step) {
        beat(workers[0]);
        clock_.advance(1s);
      }
      for (const auto& w : workers) launcher_.exit(w.pid, 0);
    };
  }
  /// One progress call of worker `p`: its page's beat counter moves.
  static void beat(const FakeProcessLauncher::Process& p) {
    std::string path = p.env("DDPRUN_PROGRESS_FILE");
    int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0) << path;
    uint64_t beats = 0;
    ASSERT_EQ(::pread(fd, &beats, sizeof(beats), 8), 8);
    ++beats;
    ASSERT_EQ(::pwrite(fd, &beats, sizeof(beats), 8), 8);
    ::close(fd);
  }
};

TEST_F(LocalAgentAutoHangTest, LearnedOnOneNodeAQuietSpellFiveStepsLongIsAHang) {
  EXPECT_EQ(run(), agent::kHangExitCode);
  EXPECT_EQ(inspector_.captures.size(), 1u);
  // What this node learned went to the others.
  EXPECT_EQ(round(0)->shared_max.at("hang_longest_ms"), 1000);
}

TEST_F(LocalAgentAutoHangTest, ALongerIntervalSeenOnAnotherNodeRaisesTheTimeout) {
  journal_->others_max["hang_longest_ms"] = 3000;  // 15 s job-wide
  EXPECT_EQ(run(), 0);
  EXPECT_TRUE(inspector_.captures.empty());
}

TEST_F(LocalAgentHangTest, OffByDefault) {
  config_.hang = agent::HangOptions{};
  launcher_.on_spawn = [this](const auto& p) {
    if (p.rank() != 1) return;
    clock_.advance(std::chrono::hours(24));
    for (const auto& q : launcher_.spawned()) launcher_.exit(q.pid, 0);
  };
  EXPECT_EQ(run(), 0);
  EXPECT_TRUE(inspector_.captures.empty());
  EXPECT_TRUE(attempt(0)[0].env("DDPRUN_PROGRESS_FILE").empty());
}

}  // namespace
}  // namespace ddprun::testing
