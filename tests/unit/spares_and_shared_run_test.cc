// Two small agent components over fakes: the spare watch (what the run hears of the
// hot spares while an attempt runs) and the shared run (the primary's run published
// through the rendezvous store, found by the others once).
#include "common/coro.h"

#include <gtest/gtest.h>

#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include "agent/shared_run/shared_run.h"
#include "agent/spares/spare_watch.h"
#include "tests/fakes/fake_rendezvous.h"
#include "tests/fakes/manual_clock.h"
#include "tests/unit/quiet_observer.h"

namespace ddprun::agent {
namespace {

class SparesObserver : public testing::QuietObserver {
 public:
  std::string attach(const std::string&, bool primary) override {
    return primary ? "10.0.0.1 4000\nrun-a" : "";
  }
  void spares_waiting(int attempt, const std::vector<std::string>& spares) override {
    heard.emplace_back(attempt, spares);
  }
  std::vector<std::pair<int, std::vector<std::string>>> heard;
};

TEST(SpareWatch, TellsTheRunOfEachChangeWhileItWatches) {
  boost::asio::io_context io;
  testing::ManualClock clock;
  testing::FakeRendezvousJournal rdzv;
  auto journal = std::make_shared<testing::FakeRoundJournal>();
  journal->io = &io;
  testing::FakeRound round(journal, rdzv);
  SparesObserver observer;
  SpareWatch spares({"s1"}, 2, round, clock);
  EXPECT_EQ(spares.waiting(), std::vector<std::string>{"s1"});  // the round's at first
  spares.watch([&observer](const std::vector<std::string>& now, int attempt) {
    observer.spares_waiting(attempt, now);
  });
  rdzv.spares_waiting = {"s1"};
  clock.advance(SpareWatch::kEvery);
  io.restart();
  io.poll();
  EXPECT_TRUE(observer.heard.empty());  // no change
  rdzv.spares_waiting = {"s1", "s2"};
  clock.advance(SpareWatch::kEvery);
  io.restart();
  io.poll();
  ASSERT_EQ(observer.heard.size(), 1u);
  EXPECT_EQ(observer.heard[0].first, 2);
  EXPECT_EQ(spares.waiting().size(), 2u);
  spares.stop();
  EXPECT_EQ(clock.pending(), 0u);
}

// A rendezvous whose node is not the primary.
class OtherNode : public testing::FakeRendezvous {
 public:
  using FakeRendezvous::FakeRendezvous;
  bool primary() const override { return false; }
};

template <typename T>
T run_on(boost::asio::io_context& io, Task<T> task) {
  std::optional<T> out;
  boost::asio::co_spawn(io, std::move(task), [&](std::exception_ptr e, T v) {
    if (e) std::rethrow_exception(e);
    out = std::move(v);
  });
  io.run();
  io.restart();
  return *out;
}

Task<bool> done(Task<void> t) {
  co_await std::move(t);
  co_return true;
}

TEST(SharedRun, ThePrimaryPublishesItsRunAndTheOthersFindItOnce) {
  boost::asio::io_context io;
  SparesObserver observer;
  auto journal = std::make_shared<testing::FakeRendezvousJournal>();
  testing::FakeRendezvous primary(journal);
  CancelSignal cancel;
  SharedRun mine(observer, "job1");
  EXPECT_TRUE(run_on(io, done(mine.publish(primary, cancel))));
  EXPECT_EQ(run_on(io, mine.primary(primary, cancel)), "");  // the primary's own
  std::vector<std::string> keys{"ddprun/tracking/job1/endpoint"};
  auto stored = run_on(io, primary.loop_store().get_now(keys, cancel));
  ASSERT_TRUE(stored.at(0));
  EXPECT_EQ(*stored.at(0), "10.0.0.1 4000\nrun-a");
}

TEST(SharedRun, AnotherNodeReadsThePrimarysRunOnce) {
  boost::asio::io_context io;
  SparesObserver observer;
  OtherNode other(std::make_shared<testing::FakeRendezvousJournal>());
  CancelSignal cancel;
  const std::string key = "ddprun/tracking/job1/endpoint";
  EXPECT_TRUE(run_on(io, done(other.loop_store().set(key, "10.0.0.1 4000\nrun-a", cancel))));
  SharedRun theirs(observer, "job1");
  EXPECT_TRUE(run_on(io, done(theirs.publish(other, cancel))));  // attached; nothing published
  EXPECT_EQ(run_on(io, theirs.primary(other, cancel)), "10.0.0.1 4000\nrun-a");
  EXPECT_TRUE(run_on(io, done(other.loop_store().set(key, "changed", cancel))));
  EXPECT_EQ(run_on(io, theirs.primary(other, cancel)), "10.0.0.1 4000\nrun-a");  // read once
}

}  // namespace
}  // namespace ddprun::agent
