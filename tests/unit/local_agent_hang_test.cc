// LocalAgent's hang detection, driven through fakes: stacks captured before anything
// stops, the round's end and exit codes, learning the timeout job-wide.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <iterator>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent/hang/hang_watch.h"
#include "tests/unit/local_agent_fixture.h"
#include "tests/unit/quiet_observer.h"

namespace ddprun::testing {
namespace {

using rendezvous::RoundEnd;

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
      if (p.local_rank() == 1) clock_.advance(10s);
    };
  }
};

// A stop signal while the stacks are still being captured (its bounds are longer than
// a grace period: a flight recorder's dump takes up to 15 s) stops the workers and ends
// the job at once, not when the capture is done.
TEST_F(LocalAgentHangTest, AStopSignalDuringTheStackCaptureEndsTheJobAtOnce) {
  config_.spec.max_restarts = 1;
  inspector_.hold = true;
  inspector_.on_capture = [this](const auto&) {
    boost::asio::post(io_, [this] { signals_.deliver(SIGTERM); });
  };
  launcher_.on_signal = [this](const auto& p, int sig) {
    if (sig == SIGTERM) launcher_.exit(p.pid, -SIGTERM);
  };
  hang_in_attempts(1);
  EXPECT_EQ(run(), 128 + SIGTERM);
  EXPECT_EQ(inspector_.held.size(), 1u) << "the capture never answered";
  EXPECT_TRUE(attempt(1).empty()) << "no restart after the signal";
}

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
  EXPECT_EQ(round(0)->asked, (std::vector<std::string>{"start_next_round", "end"}))
      << "the next round begins before the others are told";
  // This node's reports went to the others, one per worker, with its stack.
  ASSERT_EQ(round(0)->shared.size(), 2u);
  EXPECT_EQ(round(0)->shared[0].first, "hang");
  // This node judged (group rank 0) and shared its verdict, without the stacks.
  EXPECT_EQ(round(0)->shared[1].first, "hang_verdict");
  EXPECT_EQ(round(0)->shared[1].second.find("python_stack"), std::string::npos);
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

// Hangs of attempts apart, with attempts that failed otherwise between them (a worker
// killed), are not restarts in a row that got nowhere, though no step number says how
// far each got: a long job with a hang now and then goes on (the soak met this: its
// fourth hang in 26 restarts ended it with 125).
TEST_F(LocalAgentHangTest, HangsBetweenOtherFailuresAreNotInARow) {
  config_.spec.max_restarts = 10;
  config_.hang.max_no_progress_restarts = 2;
  launcher_.on_spawn = [this](const auto& p) {
    int a = p.restart_count();
    if (a >= 6) return launcher_.exit(p.pid, 0);
    if (a % 2 == 1) {  // attempts 1, 3, 5: a worker fails
      if (p.local_rank() == 1) launcher_.exit(p.pid, 1);
      return;
    }
    if (p.local_rank() == 1) clock_.advance(10s);  // attempts 0, 2, 4 hang
  };
  EXPECT_EQ(run(), 0);
  EXPECT_EQ(inspector_.captures.size(), 3u) << "three hangs, none in a row";
  EXPECT_EQ(attempt(6).size(), 2u);
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
  ASSERT_EQ(round(0)->shared.size(), 2u);
}

// Stacks of 300 KiB on each of two ranks: the node shares them cut to its 256 KiB; its
// own report on disk has them whole.
TEST_F(LocalAgentHangTest, TheStacksSharedAreCutAndTheReportKeepsThemWhole) {
  for (int line = 0; inspector_.native_stack.size() < (300u << 10); ++line)
    inspector_.native_stack += "#" + std::to_string(line) + "  0x00007f in ncclWait ()\n";
  hang_in_attempts(1);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run(), agent::kHangExitCode);
  std::string said = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(round(0)->shared.at(0).first, "hang");
  size_t stacks = 0;
  for (const auto& r : nlohmann::json::parse(round(0)->shared[0].second)) {
    std::string native = r.at("native_stack");
    stacks += native.size() + r.at("python_stack").get<std::string>().size();
    EXPECT_NE(native.find("bytes more; cut to share, all of it is in "), std::string::npos);
  }
  EXPECT_LE(stacks, (256u << 10) + 4 * 200);  // and each cut's note
  const std::string marker = "stacks of every rank: ";
  size_t at = said.find(marker);
  ASSERT_NE(at, std::string::npos) << said;
  std::ifstream file(said.substr(at + marker.size(), said.find('\n', at) - at - marker.size()));
  std::string report((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_GT(report.size(), 600u << 10);
  EXPECT_EQ(report.find("cut to share"), std::string::npos);
}

// Keeps what the run is told of hangs and of the job's end.
class HangObserver : public QuietObserver {
 public:
  void hang(int, const std::string& report) override { hangs.push_back(report); }
  void finished(const std::string&, int, const std::string& why) override { root_cause = why; }

  std::vector<std::string> hangs;
  std::string root_cause;
};

// This node is group rank 1 of b and a: group rank 0 (b) judges.
class SecondNodeHangTest : public LocalAgentHangTest {
 protected:
  SecondNodeHangTest() {
    elastic({{"b", "a"}}, 2);
    journal_->group_rank = 1;
    observer_ = &observer;
  }
  // run(), with what the agent said on stderr kept in `said`.
  int run_keeping_stderr() {
    ::testing::internal::CaptureStderr();
    int code = run();
    said = ::testing::internal::GetCapturedStderr();
    return code;
  }
  HangObserver observer;
  std::string said;
};

// A node other than group rank 0 shares its stacks and reads nobody's: it takes the
// verdict group rank 0 shared (the culprit, the root cause, whether restarts got
// anywhere), and the run's hang event is the judging node's alone. Here rank 0 always
// reached step 7: the hangs after the first got nowhere.
TEST_F(SecondNodeHangTest, ANodeOtherThanGroupRankZeroTakesTheJudgingNodesVerdict) {
  config_.spec.max_restarts = 10;
  config_.hang.max_no_progress_restarts = 2;
  agent::HangWatch::Verdict judged;
  judged.diagnosis.culprits = {0};
  judged.diagnosis.headline = "rank 0 (local_rank 0) on node 0 (b) stopped in load_batch";
  judged.diagnosis.summary = "  culprit: rank 0 (local_rank 0) on node 0 (b)\n";
  judged.top_step = 7;
  judged.report_at = "b:/logs/attempt_0/hang_node0.txt";
  journal_->others_shared["hang_verdict"] = {agent::HangWatch::shared_verdict(judged)};
  hang_in_attempts(100);
  EXPECT_EQ(run_keeping_stderr(), agent::kNoProgressExitCode);
  EXPECT_EQ(inspector_.captures.size(), 3u) << "the first hang, then two without progress";
  // Its file has its own ranks' stacks and says where every rank's are.
  const std::string marker = "stacks of this node's ranks: ";
  size_t at = said.find(marker);
  ASSERT_NE(at, std::string::npos) << said;
  at += marker.size();
  std::ifstream file(said.substr(at, said.find(';', at) - at));
  std::string report((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_NE(report.find("every rank's are in b:/logs/attempt_0/hang_node0.txt"), std::string::npos)
      << report;
  EXPECT_NE(report.find("=== rank 2 (local_rank 0)"), std::string::npos) << report;
  EXPECT_EQ(report.find("=== rank 0 "), std::string::npos) << report;
  EXPECT_EQ(observer.root_cause.rfind("hang: " + judged.diagnosis.headline + "; 2 restart(s)", 0),
            0u)
      << observer.root_cause;
  EXPECT_TRUE(observer.hangs.empty()) << "the judging node has the run keep the hang";
  // Its stacks went to the judging node; it shared no verdict of its own.
  ASSERT_EQ(round(0)->shared.size(), 2u);
  EXPECT_EQ(round(0)->shared[0].first, "hang");
  EXPECT_NE(round(0)->shared[0].second.find("python_stack"), std::string::npos);
  EXPECT_EQ(round(0)->shared[1], (std::pair<std::string, std::string>{"hang_verdict", ""}));
}

// Without a verdict from group rank 0 (gone, or garbage), a node judges its own ranks.
TEST_F(SecondNodeHangTest, ANodeWithoutAVerdictJudgesItsOwnRanks) {
  journal_->others_shared["hang_verdict"] = {"{\"culprits\": \"nobody\"}"};
  hang_in_attempts(1);
  EXPECT_EQ(run_keeping_stderr(), agent::kHangExitCode);
  EXPECT_EQ(observer.root_cause.rfind("hang: no progress for 6.0 s", 0), 0u) << observer.root_cause;
  EXPECT_NE(said.find("group rank 0 gave no verdict: this node's ranks were judged alone"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("stacks of this node's ranks: "), std::string::npos) << said;
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
  config_.stragglers.threshold = 0;  // its step times are on the progress page too
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

namespace ddprun::testing {
namespace {

// A whole elastic job through fakes, with no process, socket or real time: three nodes
// join; a worker fails (restart); a node is lost (the job shrinks, no restart); a
// worker hangs (stacks captured, restart); then every worker and node succeeds.
TEST_F(LocalAgentHangTest, AWholeElasticJobJoinsFailsShrinksHangsAndSucceeds) {
  elastic({{"a", "b", "c"}, {"a", "b", "c"}, {"a", "b"}, {"a", "b"}, {"a", "b"}}, 2);
  config_.spec.max_restarts = 2;
  launcher_.on_spawn = [this](const auto& p) {
    size_t r = journal_->rounds.size() - 1;
    if (r >= 3) return finish_with_the_others(p);
    if (p.local_rank() != 1) return;
    if (r == 0) launcher_.exit(p.pid, 3);               // a failure
    if (r == 1) round(1)->report_dead({"c"});           // a lost node
    if (r == 2) clock_.advance(10s);                    // a hang: no progress for 10 s
  };
  EXPECT_EQ(run(), 0);
  ASSERT_EQ(journal_->rounds.size(), 4u);
  EXPECT_EQ(round(0)->written->kind, RoundEnd::Kind::kRestart);
  EXPECT_EQ(round(0)->written->exitcode, 3);
  EXPECT_EQ(round(1)->written->kind, RoundEnd::Kind::kMembership);
  EXPECT_EQ(round(1)->written->dropped, std::vector<std::string>{"c"});
  EXPECT_TRUE(round(2)->written->hang);
  EXPECT_EQ(round(2)->written->kind, RoundEnd::Kind::kRestart);
  EXPECT_EQ(inspector_.captures.size(), 1u) << "the hung attempt's stacks";
  EXPECT_FALSE(round(3)->written) << "the last round ends by success";
  EXPECT_TRUE(round(3)->node_finished);
  // World sizes follow the rounds: 3 nodes x 2 workers, then 2 x 2; restarts count
  // failures and hangs, not the lost node.
  std::vector<std::string> worlds, restarts;
  for (const auto& p : launcher_.spawned()) {
    if (p.local_rank() != 0) continue;
    worlds.push_back(p.env("WORLD_SIZE"));
    restarts.push_back(p.env("TORCHELASTIC_RESTART_COUNT"));
  }
  EXPECT_EQ(worlds, (std::vector<std::string>{"6", "6", "4", "4"}));
  EXPECT_EQ(restarts, (std::vector<std::string>{"0", "1", "1", "2"}));
  EXPECT_TRUE(journal_->finished_job);
}

}  // namespace
}  // namespace ddprun::testing
