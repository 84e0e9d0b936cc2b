#pragma once

// The LocalAgent unit tests' fixture: the agent over fakes (no process, no socket, no
// real time). Each test scripts the workers' exits (and the other nodes) and checks what
// the agent did.
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "agent/local_agent.h"
#include "tests/fakes/fake_node_probe.h"
#include "tests/fakes/fake_process_inspector.h"
#include "tests/fakes/fake_process_launcher.h"
#include "tests/fakes/fake_rendezvous.h"
#include "tests/fakes/fake_signals.h"
#include "tests/fakes/manual_clock.h"

namespace ddprun::testing {

using namespace std::chrono_literals;

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
        io_,
        launcher_,
        clock_,
        [this,
         &handler](CancelSignal& cancel) -> Task<std::unique_ptr<rendezvous::RendezvousHandler>> {
          made_on_ = std::this_thread::get_id();
          if (connect_waits_) co_await sleep_for(std::chrono::hours(1), cancel);
          co_return std::move(handler);
        },
        nullptr,
        observer_,
        &inspector_,
        &signals_,
        &node_,
        [this](std::string reason, CancelSignal& cancel) -> Task<void> {
          if (connect_waits_) co_await sleep_for(std::chrono::hours(1), cancel);
          journal_->told_unfit = std::move(reason);
        }};
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

  tracking::RunObserver* observer_ = nullptr;  // the run the agent tells; none by default
  std::thread::id made_on_;     // the thread that made the rendezvous handler last
  bool connect_waits_ = false;  // the handler (or tell_unfit) waits for the store until cancelled

  /// A job of nodes a and b: this node's workers succeed while b has not finished;
  /// `meanwhile` runs once this node is marked done, then b finishes too.
  void finish_while_another_node_runs(std::function<void()> meanwhile) {
    elastic({{"a", "b"}}, 2);
    launcher_.on_spawn = [this, meanwhile](const auto& p) {
      if (p.rank() != 1) return;
      round(0)->unfinished = {1};
      round(0)->on_node_finished = [this, meanwhile] {
        meanwhile();
        round(0)->all_done();
      };
      for (const auto& q : attempt(0)) launcher_.exit(q.pid, 0);
    };
  }

  /// The worker succeeds, and so does every other node of its round.
  void finish_with_the_others(const FakeProcessLauncher::Process& p) {
    launcher_.exit(p.pid, 0);
    journal_->rounds.back()->all_done();
  }

  boost::asio::io_context io_;
  FakeProcessLauncher launcher_{io_};
  FakeProcessInspector inspector_{io_};
  ManualClock clock_;
  FakeSignals signals_;  // what the tests send ddprun
  FakeNodeProbe node_;   // what preflight finds
  std::shared_ptr<FakeRendezvousJournal> journal_ = std::make_shared<FakeRendezvousJournal>();
  agent::AgentConfig config_;
  std::filesystem::path log_base_ =
      std::filesystem::temp_directory_path() /
      ("ddprun_agent_test_" + std::to_string(::getpid()) + "_" +
       ::testing::UnitTest::GetInstance()->current_test_info()->name());
};

}  // namespace ddprun::testing
