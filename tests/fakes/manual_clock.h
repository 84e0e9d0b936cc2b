#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>

#include "common/clock.h"

namespace ddprun::testing {

/// Time that moves only when a test says so: advance() fires, in deadline order,
/// every timer that falls due. Single-threaded (the loop's thread).
class ManualClock : public Clock {
 public:
  std::unique_ptr<Timer> make_timer() override { return std::make_unique<ManualTimer>(*this); }

  std::chrono::milliseconds now() const override { return now_; }

  void advance(std::chrono::milliseconds d) {
    auto until = now_ + d;
    while (!due_.empty() && due_.begin()->first.first <= until) {
      auto it = due_.begin();
      now_ = it->first.first;
      auto fire = std::move(it->second);
      due_.erase(it);
      fire();
    }
    now_ = until;
  }

  /// Timers armed now.
  size_t pending() const { return due_.size(); }

 private:
  using Key = std::pair<std::chrono::milliseconds, uint64_t>;  // deadline, then order

  class ManualTimer : public Timer {
   public:
    explicit ManualTimer(ManualClock& clock) : clock_(clock) {}
    ~ManualTimer() override { cancel(); }
    void start(std::chrono::milliseconds delay, std::function<void()> fire) override {
      cancel();
      key_ = Key{clock_.now_ + delay, clock_.sequence_++};
      clock_.due_[*key_] = [this, fire = std::move(fire)] {
        key_.reset();
        fire();
      };
    }
    void cancel() override {
      if (key_) clock_.due_.erase(*key_);
      key_.reset();
    }

   private:
    ManualClock& clock_;
    std::optional<Key> key_;
  };

  std::chrono::milliseconds now_{0};
  uint64_t sequence_ = 0;
  std::map<Key, std::function<void()>> due_;
};

}  // namespace ddprun::testing
