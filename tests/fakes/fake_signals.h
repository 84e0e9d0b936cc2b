#pragma once

#include <algorithm>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include <boost/asio/post.hpp>

#include "os/signal_source.h"

namespace ddprun::testing {

/// Signals a test sends by hand: deliver() reaches the newest catch of that signal on
/// its loop, as the kernel's would, with no signal raised in the test process.
class FakeSignals : public os::SignalSource {
 public:
  class FakeCatch : public Catch {
   public:
    FakeCatch(FakeSignals& owner, boost::asio::io_context& io, std::vector<int> signals,
              OnSignal on_signal)
        : owner_(owner), io_(io), signals_(std::move(signals)), on_signal_(std::move(on_signal)) {}
    ~FakeCatch() override { owner_.forget(this); }
    void take_pending() override {
      while (!pending_.empty()) {
        int sig = pending_.front();
        pending_.pop_front();
        on_signal_(sig, 0);
      }
    }
    bool catches(int sig) const {
      return std::find(signals_.begin(), signals_.end(), sig) != signals_.end();
    }
    void deliver(int sig) {
      pending_.push_back(sig);
      boost::asio::post(io_, [this, alive = std::weak_ptr<bool>(alive_)] {
        if (!alive.expired()) take_pending();
      });
    }

   private:
    FakeSignals& owner_;
    boost::asio::io_context& io_;
    std::vector<int> signals_;
    OnSignal on_signal_;
    std::deque<int> pending_;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  };

  std::unique_ptr<Catch> catch_signals(boost::asio::io_context& io, const std::vector<int>& signals,
                                       OnSignal on_signal) override {
    auto c = std::make_unique<FakeCatch>(*this, io, signals, std::move(on_signal));
    catches_.push_back(c.get());
    return c;
  }

  /// Sends `sig` to ddprun: the newest catch of it takes it (none: it is lost).
  void deliver(int sig) {
    for (auto it = catches_.rbegin(); it != catches_.rend(); ++it) {
      if ((*it)->catches(sig)) return (*it)->deliver(sig);
    }
  }

 private:
  void forget(FakeCatch* c) {
    catches_.erase(std::remove(catches_.begin(), catches_.end(), c), catches_.end());
  }
  std::vector<FakeCatch*> catches_;
};

}  // namespace ddprun::testing
