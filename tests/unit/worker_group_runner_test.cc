// WorkerGroupRunner over a fake launcher and a hand-moved clock.
#include "agent/worker_group_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <boost/asio/executor_work_guard.hpp>

#include "agent/log_dir.h"
#include "agent/hang/timer_watchdog.h"
#include "tests/fakes/fake_process_inspector.h"
#include "tests/fakes/fake_process_launcher.h"
#include "tests/fakes/log_capture.h"
#include "tests/fakes/manual_clock.h"
#include "tests/unit/quiet_observer.h"

namespace ddprun::testing {
namespace {

using namespace std::chrono_literals;

class WorkerGroupRunnerTest : public ::testing::Test {
 protected:
  WorkerGroupRunnerTest() {
    config_.spec.local_world_size = 3;
    config_.spec.argv = {"/bin/prog", "--slot=${local_rank}"};
    config_.grace_period = 10s;
  }
  ~WorkerGroupRunnerTest() override { std::filesystem::remove_all(base_); }

  agent::WorkerGroup group(int restart_count = 0) const {
    agent::WorkerGroup g;
    g.restart_count = restart_count;
    for (int i = 0; i < config_.spec.local_world_size; ++i) {
      agent::Worker w;
      w.local_rank = i;
      w.global_rank = 10 + i;
      g.workers.push_back(w);
    }
    return g;
  }

  /// Starts a group and runs the loop until it is done.
  void run_group(int restart_count = 0) {
    done_ = false;
    runner_.start(
        group(restart_count),
        [this](const agent::FailureRecord& f) { first_failures_.push_back(f); },
        [this] { done_ = true; });
    while (!done_) io_.run_one();
  }

  pid_t pid(int local_rank) const { return launcher_.spawned().at(local_rank).pid; }

  /// Runs a group whose workers' fate is `steps`, each run on the loop once what the
  /// one before it did (exits, which the launcher posts) has reached the runner.
  void run_steps(const std::vector<std::function<void()>>& steps, int restart_count = 0) {
    launcher_.on_spawn = [&](const auto& p) {
      if (p.options.argv[1] != "--slot=2") return;
      boost::asio::post(io_, [&] { next_step(steps, 0); });
    };
    run_group(restart_count);
  }
  void next_step(const std::vector<std::function<void()>>& steps, size_t i) {
    if (i == steps.size()) return;
    steps[i]();
    boost::asio::post(io_, [this, &steps, i] { next_step(steps, i + 1); });
  }

  boost::asio::io_context io_;
  // The agent's loop always has its signal waits; without work this one would stop.
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_{
      io_.get_executor()};
  FakeProcessLauncher launcher_{io_};
  ManualClock clock_;
  agent::AgentConfig config_;
  std::filesystem::path base_ =
      std::filesystem::temp_directory_path() / ("ddprun_runner_test_" + std::to_string(::getpid()));
  agent::LogDir log_dir_{base_.string(), "job"};
  agent::WorkerGroupRunner runner_{io_,     config_,  launcher_, clock_,
                                   nullptr, log_dir_, "host",    nullptr};
  bool done_ = false;
  std::vector<agent::FailureRecord> first_failures_;
};

TEST_F(WorkerGroupRunnerTest, SpawnsEveryWorkerWithItsArgumentsAndOutput) {
  launcher_.on_spawn = [&](const auto& p) { launcher_.exit(p.pid, 0); };
  run_group();
  auto spawned = launcher_.spawned();
  ASSERT_EQ(spawned.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(spawned[i].options.argv[1], "--slot=" + std::to_string(i));
    EXPECT_EQ(spawned[i].env("LOCAL_RANK"), std::to_string(i));
    EXPECT_EQ(spawned[i].env("RANK"), std::to_string(10 + i));
    EXPECT_GE(spawned[i].options.stdout_fd, 0) << "output goes through ddprun";
    EXPECT_GE(spawned[i].options.stderr_fd, 0);
  }
  EXPECT_TRUE(runner_.failures().empty());
  EXPECT_TRUE(runner_.idle());
}

TEST_F(WorkerGroupRunnerTest, FailuresNoticedTogetherAllCount) {
  launcher_.on_spawn = [&](const auto& p) {
    if (p.options.argv[1] == "--slot=2") launcher_.exit({{pid(2), 9}, {pid(0), -SIGABRT}});
  };
  run_group();
  ASSERT_EQ(runner_.failures().size(), 2u);
  EXPECT_EQ(runner_.failures()[0].exitcode, 9) << "root cause first";
  EXPECT_EQ(runner_.failures()[1].exitcode, -SIGABRT);
  ASSERT_EQ(first_failures_.size(), 1u) << "on_failure once, for the first";
  EXPECT_EQ(launcher_.process(pid(1)).signals, std::vector<int>{SIGTERM})
      << "only the survivor is stopped";
}

// A torch worker that NCCL's own timeout ended leaves its flight recorder's dump where
// ddprun pointed it (hang detection on): the failure says what the dump says.
TEST_F(WorkerGroupRunnerTest, AFailedWorkersFlightRecorderDumpIsInItsFailure) {
  config_.hang.mode = agent::HangOptions::Mode::kFixed;
  config_.hang.timeout = 60s;
  launcher_.on_spawn = [&](const auto& p) {
    if (p.options.argv[1] != "--slot=1") return;
    EXPECT_EQ(p.env("TORCH_NCCL_DEBUG_INFO_PIPE_FILE"), p.env("TORCH_NCCL_DEBUG_INFO_TEMP_FILE"));
    std::string dump = p.env("TORCH_NCCL_DEBUG_INFO_TEMP_FILE") + "11";
    std::ofstream(dump) << R"({"version": "2.4", "entries": [{"process_group": ["0", ""],
        "collective_seq_id": 8, "profiling_name": "nccl:all_gather", "state": "scheduled"}]})";
    launcher_.exit(p.pid, -SIGABRT);
  };
  run_group();
  ASSERT_EQ(runner_.failures().size(), 1u);
  const std::string& text = runner_.failures()[0].traceback;
  EXPECT_NE(text.find("NCCL flight recorder ("), std::string::npos) << text;
  EXPECT_NE(text.find("nccl_trace_rank_11): process group 0 at #8 nccl:all_gather (scheduled)"),
            std::string::npos)
      << text;
}

TEST_F(WorkerGroupRunnerTest, WorkersStoppedAfterAFailureAreNotFailures) {
  launcher_.on_spawn = [&](const auto& p) {
    if (p.options.argv[1] == "--slot=0") launcher_.exit(p.pid, 1);
  };
  run_group();
  ASSERT_EQ(runner_.failures().size(), 1u);
  EXPECT_EQ(runner_.failures()[0].local_rank, 0);
}

// A worker that exits with a code of its own while the stop after a failure is under way
// failed too (every rank failing shows every rank); one the stop's signal ends did not.
TEST_F(WorkerGroupRunnerTest, AWorkerFailingOnItsOwnDuringTheStopIsAFailureToo) {
  launcher_.ignored = {SIGTERM};  // each ends as the step below says
  run_steps({[&] { launcher_.exit(pid(0), 3); },
             [&] { launcher_.exit({{pid(1), 3}, {pid(2), 128 + SIGTERM}}); }});
  ASSERT_EQ(runner_.failures().size(), 2u);
  EXPECT_EQ(runner_.failures()[0].local_rank, 0) << "root cause first";
  EXPECT_EQ(runner_.failures()[1].local_rank, 1);
  EXPECT_EQ(runner_.failures()[1].exitcode, 3);
}

TEST_F(WorkerGroupRunnerTest, GraceRestartsWithASecondStopAndEndsInSigkill) {
  launcher_.ignored = {SIGUSR1};
  launcher_.on_spawn = [&](const auto& p) {
    if (p.options.argv[1] != "--slot=2") return;
    launcher_.exit(pid(0), 0);
    boost::asio::post(io_, [&] {  // once the loop has heard of that exit
      runner_.stop(SIGUSR1);
      clock_.advance(6s);
      runner_.stop(SIGUSR1);  // the grace period starts again
      clock_.advance(6s);
      EXPECT_EQ(launcher_.process(pid(1)).signals, (std::vector<int>{SIGUSR1, SIGUSR1}));
      clock_.advance(4s);
    });
  };
  run_group();
  EXPECT_TRUE(launcher_.process(pid(0)).signals.empty()) << "an exited worker gets nothing";
  EXPECT_EQ(launcher_.process(pid(1)).signals, (std::vector<int>{SIGUSR1, SIGUSR1, SIGKILL}));
  EXPECT_TRUE(runner_.failures().empty()) << "stopped, not failed";
}

TEST_F(WorkerGroupRunnerTest, LeftoversAreKilledOnceEveryWorkerHasExitedBeforeDone) {
  launcher_.on_spawn = [&](const auto& p) {
    EXPECT_TRUE(launcher_.leftover_kills.empty()) << "not while workers start";
    launcher_.exit(p.pid, 0);
  };
  run_group();
  ASSERT_EQ(launcher_.leftover_kills.size(), 1u);
  EXPECT_TRUE(launcher_.leftover_kills[0].empty()) << "only after the last worker exited";
}

TEST_F(WorkerGroupRunnerTest, ExitOfAnEarlierAttemptDoesNotCount) {
  launcher_.on_spawn = [&](const auto& p) { launcher_.exit(p.pid, 0); };
  run_group(0);
  pid_t old = pid(0);
  launcher_.on_spawn = [&, old](const auto& p) {
    if (p.restart_count() != 1 || p.options.argv[1] != "--slot=2") return;
    // A late report for the last attempt's pid (pids are not reused this fast in
    // reality, but a report can be) changes nothing now.
    launcher_.report_stale_exit(old, 1);
    for (size_t i = 3; i < 6; ++i) launcher_.exit(launcher_.spawned()[i].pid, 0);
  };
  run_group(1);
  EXPECT_TRUE(runner_.failures().empty());
}

TEST_F(WorkerGroupRunnerTest, AWorkerThatSigkillCannotEndIsNamedAndLeftBehind) {
  // A process in uninterruptible sleep ignores every signal until it leaves the kernel.
  FakeProcessInspector inspector(io_);
  agent::WorkerGroupRunner runner{io_,      config_, launcher_, clock_,    nullptr,
                                  log_dir_, "host",  nullptr,   &inspector};
  launcher_.on_spawn = [&](const auto& p) {
    if (p.options.argv[1] != "--slot=2") return;
    launcher_.ignored = {SIGTERM, SIGKILL};
    inspector.states[pid(1)] = 'D';
    launcher_.exit(pid(0), 0);
    launcher_.exit(pid(2), 0);
    boost::asio::post(io_, [&] {
      runner.stop(SIGTERM);
      clock_.advance(config_.grace_period);  // SIGKILL
      clock_.advance(std::chrono::minutes(1));
    });
  };
  bool done = false;
  runner.start(group(), nullptr, [&done] { done = true; });
  while (!done) io_.run_one();
  EXPECT_EQ(launcher_.process(pid(1)).signals, (std::vector<int>{SIGTERM, SIGKILL}));
  EXPECT_TRUE(launcher_.process(pid(1)).alive) << "still there, and ddprun went on";
  EXPECT_TRUE(runner.idle());
}

// A stopped worker (state T) acts on SIGTERM only once it runs again: it is continued
// right after, so that it ends now rather than at SIGKILL; a running one is left alone.
TEST_F(WorkerGroupRunnerTest, AStoppedWorkerIsContinuedAfterTheStopSignal) {
  FakeProcessInspector inspector(io_);
  agent::WorkerGroupRunner runner{io_,      config_, launcher_, clock_,    nullptr,
                                  log_dir_, "host",  nullptr,   &inspector};
  launcher_.on_spawn = [&](const auto& p) {
    if (p.options.argv[1] != "--slot=2") return;
    inspector.states[pid(1)] = 'T';
    boost::asio::post(io_, [&] {
      runner.stop(SIGTERM);
      for (int i = 0; i < 3; ++i) launcher_.exit(pid(i), -SIGTERM);
    });
  };
  bool done = false;
  runner.start(group(), nullptr, [&done] { done = true; });
  while (!done) io_.run_one();
  EXPECT_EQ(launcher_.process(pid(1)).signals, (std::vector<int>{SIGTERM, SIGCONT}));
  EXPECT_EQ(launcher_.process(pid(0)).signals, std::vector<int>{SIGTERM});
}

// A rank stuck at its end (PyTorch 1.13's gloo teardown deadlock) while the node's other
// ranks are done: named on the console after the time given, counted from the last
// exit, and left running (a warning only: with hang detection off nothing is stopped).
TEST_F(WorkerGroupRunnerTest, ARankStillRunningLongAfterTheOthersFinishedIsNamedOnce) {
  LogCapture log;
  config_.hang.straggler_warning = std::chrono::seconds(300);
  // Each step after the exits before it reached the runner (they are posted).
  std::vector<std::function<void()>> steps{
      [&] { launcher_.exit(pid(0), 0); },
      [&] {
        clock_.advance(std::chrono::seconds(200));
        launcher_.exit(pid(2), 0);  // the wait starts again from here
      },
      [&] {
        clock_.advance(std::chrono::seconds(299));
        EXPECT_EQ(log.text().find("still running"), std::string::npos) << log.text();
        clock_.advance(std::chrono::seconds(1));
        EXPECT_NE(log.text().find("rank 11 (local_rank 1, pid " + std::to_string(pid(1)) +
                                  ") is still running 300 s after the last of this node's 2 "
                                  "finished rank(s) exited 0"),
                  std::string::npos)
            << log.text();
        clock_.advance(std::chrono::seconds(3000));
        launcher_.exit(pid(1), 0);
      }};
  run_steps(steps);
  EXPECT_TRUE(launcher_.process(pid(1)).signals.empty()) << "never stopped for it";
  EXPECT_EQ(log.text().find("still running"), log.text().rfind("still running")) << "once";
  EXPECT_TRUE(first_failures_.empty());
}

TEST_F(WorkerGroupRunnerTest, NoStragglerIsNamedAfterAFailureOrWhenTurnedOff) {
  LogCapture log;
  config_.hang.straggler_warning = std::chrono::seconds(0);
  std::vector<std::function<void()>> off{[&] {
                                           launcher_.exit(pid(0), 0);
                                           launcher_.exit(pid(2), 0);
                                         },
                                         [&] {
                                           clock_.advance(std::chrono::hours(1));
                                           launcher_.exit(pid(1), 0);
                                         }};
  run_steps(off);
  config_.hang.straggler_warning = std::chrono::seconds(300);
  std::vector<std::function<void()>> failed{[&] {
                                              launcher_.exit(pid(3), 0);
                                              launcher_.exit(pid(5), 3);
                                            },
                                            [&] {
                                              // The others are being stopped meanwhile.
                                              clock_.advance(std::chrono::seconds(300));
                                              clock_.advance(config_.grace_period);
                                            }};
  run_steps(failed, 1);
  EXPECT_EQ(log.text().find("still running"), std::string::npos) << log.text();
}

// What the runner tells the tracking side before its workers start, and when.
class StartingObserver : public QuietObserver {
 public:
  explicit StartingObserver(const FakeProcessLauncher& launcher) : launcher_(launcher) {}
  void add_worker_env(int, int, int, std::map<std::string, std::string>&) override { ++envs; }
  bool may_start_workers(int attempt, bool wait) override {
    asked.push_back({attempt, wait, envs, launcher_.spawned().size()});
    return wait || envs >= ready_after_envs;
  }
  void worker_started(int, int, int, int, pid_t) override { envs_at_start.push_back(envs); }

  struct Asked {
    int attempt;
    bool wait;
    int envs;        // workers set up by then
    size_t spawned;  // workers started by then
  };
  int envs = 0;
  int ready_after_envs = 1000;  // ready once this many workers are set up
  std::vector<Asked> asked;
  std::vector<int> envs_at_start;  // workers set up when each one started

 private:
  const FakeProcessLauncher& launcher_;
};

// The observer may hold the workers (until its run is made). While it does, workers are
// set up; it is waited for only once every one is, and no worker starts before it
// lets them.
TEST_F(WorkerGroupRunnerTest, WorkersAreSetUpWhileTheObserverHoldsThemAndStartOnceItLets) {
  StartingObserver observer(launcher_);
  agent::WorkerGroupRunner observed{io_,     config_,  launcher_, clock_,
                                    nullptr, log_dir_, "host",    &observer};
  launcher_.on_spawn = [&](const auto& p) { launcher_.exit(p.pid, 0); };
  bool done = false;
  observed.start(
      group(2), [](const agent::FailureRecord&) {}, [&done] { done = true; });
  while (!done) io_.run_one();
  ASSERT_EQ(observer.asked.size(), 4u);  // after each set-up, then the wait
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(observer.asked[i].attempt, 2);
    EXPECT_FALSE(observer.asked[i].wait);
    EXPECT_EQ(observer.asked[i].envs, i + 1);
  }
  EXPECT_TRUE(observer.asked[3].wait);
  EXPECT_EQ(observer.asked[3].envs, 3) << "waited for before every worker was set up";
  EXPECT_EQ(observer.asked[3].spawned, 0u) << "a worker started while held";
  EXPECT_EQ(launcher_.spawned().size(), 3u);
}

// Once the observer lets them, the workers set up so far start at once, and the rest
// each right after its set-up: a wide group's first workers do not wait for the last
// one's set-up.
TEST_F(WorkerGroupRunnerTest, OnceTheObserverLetsThemWorkersStartAsTheyAreSetUp) {
  StartingObserver observer(launcher_);
  observer.ready_after_envs = 2;
  agent::WorkerGroupRunner observed{io_,     config_,  launcher_, clock_,
                                    nullptr, log_dir_, "host",    &observer};
  launcher_.on_spawn = [&](const auto& p) { launcher_.exit(p.pid, 0); };
  bool done = false;
  observed.start(
      group(), [](const agent::FailureRecord&) {}, [&done] { done = true; });
  while (!done) io_.run_one();
  EXPECT_EQ(observer.envs_at_start, (std::vector<int>{2, 2, 3}));
  ASSERT_EQ(observer.asked.size(), 2u) << "asked again once it had let them";
  EXPECT_EQ(observer.asked[1].spawned, 0u);
}

// torchrun's worker watchdog through the runner: requests on a real FIFO, time moved
// by hand, and a fake inspector standing in for eu-stack and faulthandler.
class WatchdogReapingTest : public WorkerGroupRunnerTest {
 protected:
  // What torch's FileTimerClient writes for `pid`: a `seconds` timer that ends in SIGKILL.
  void request(pid_t pid, double seconds) {
    std::string line =
        "{\"version\": 1, \"pid\": " + std::to_string(pid) +
        ", \"scope_id\": \"train.py#7\", \"expiration_time\": " + std::to_string(wall_ + seconds) +
        ", \"signal\": 9}\n";
    int fd = ::open(watchdog_.path().c_str(), O_WRONLY | O_NONBLOCK);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, line.data(), line.size()), static_cast<ssize_t>(line.size()));
    ::close(fd);
    io_.run_for(50ms);  // the loop reads it
  }

  FakeProcessInspector inspector_{io_};
  agent::WorkerGroupRunner inspected_{io_,      config_, launcher_, clock_,     nullptr,
                                      log_dir_, "host",  nullptr,   &inspector_};
  double wall_ = 1000;
  bool made_base_ = std::filesystem::create_directories(base_);  // before the FIFO in it
  agent::TimerWatchdog watchdog_{io_, clock_, (base_ / "timer").string(), [this] { return wall_; }};
};

TEST_F(WatchdogReapingTest, TheStacksAreTakenBeforeTheSignalAndTheSummarySaysWhere) {
  std::vector<int> signals_at_capture{-1};
  inspector_.on_capture = [&](const std::vector<agent::StackRequest>&) {
    signals_at_capture = launcher_.process(pid(1)).signals;
  };
  bool done = false;
  std::vector<agent::FailureRecord> failures;
  inspected_.start(
      group(), [&](const agent::FailureRecord& f) { failures.push_back(f); },
      [&done] { done = true; });
  inspected_.watch_timers(watchdog_);
  request(pid(1), 1.0);
  wall_ += 1;
  clock_.advance(1s);
  while (failures.empty()) io_.run_one();
  ASSERT_EQ(inspector_.captures.size(), 1u);
  ASSERT_EQ(inspector_.captures[0].size(), 1u);
  EXPECT_EQ(inspector_.captures[0][0].pid, pid(1));
  EXPECT_TRUE(signals_at_capture.empty()) << "the stacks come first";
  EXPECT_EQ(launcher_.process(pid(1)).signals, (std::vector<int>{SIGKILL}));
  EXPECT_EQ(failures[0].local_rank, 1);
  std::string where = "pid" + std::to_string(pid(1)) + ".py:1";
  EXPECT_NE(failures[0].traceback.find("reaped by the worker watchdog: scope train.py#7 expired "
                                       "after 1.0 s, in <module>"),
            std::string::npos)
      << failures[0].traceback;
  EXPECT_NE(failures[0].traceback.find(where), std::string::npos) << failures[0].traceback;
  inspected_.stop(SIGTERM);
  while (!done) io_.run_one();
}

TEST_F(WatchdogReapingTest, AWorkerThatEndsWhileItsStacksAreTakenIsNotSignalled) {
  inspector_.on_capture = [&](const std::vector<agent::StackRequest>&) {
    launcher_.exit(pid(1), 0);
  };
  bool done = false;
  inspected_.start(group(), nullptr, [&done] { done = true; });
  inspected_.watch_timers(watchdog_);
  request(pid(1), 1.0);
  wall_ += 1;
  clock_.advance(1s);
  io_.run_for(50ms);
  ASSERT_EQ(inspector_.captures.size(), 1u);
  EXPECT_TRUE(launcher_.process(pid(1)).signals.empty());
  EXPECT_TRUE(inspected_.failures().empty());
  inspected_.stop(SIGTERM);
  while (!done) io_.run_one();
}

}  // namespace
}  // namespace ddprun::testing
