#include "common/clock.h"

#include <boost/asio/steady_timer.hpp>

namespace ddprun {
namespace {

class SteadyTimer : public Timer {
 public:
  explicit SteadyTimer(boost::asio::io_context& io) : state_(std::make_shared<State>(io)) {}
  ~SteadyTimer() override {
    ++state_->generation;
    boost::system::error_code ignored;
    state_->timer.cancel(ignored);
  }

  void start(std::chrono::milliseconds delay, std::function<void()> fire) override {
    uint64_t generation = ++state_->generation;
    state_->timer.expires_after(delay);
    state_->timer.async_wait(
        [state = state_, generation, fire = std::move(fire)](const boost::system::error_code& ec) {
          // A wait that was already due when cancelled still completes without an
          // error: the generation tells it apart.
          if (!ec && state->generation == generation) fire();
        });
  }

  void cancel() override {
    ++state_->generation;
    boost::system::error_code ignored;
    state_->timer.cancel(ignored);
  }

 private:
  struct State {
    explicit State(boost::asio::io_context& io) : timer(io) {}
    boost::asio::steady_timer timer;
    uint64_t generation = 0;
  };
  std::shared_ptr<State> state_;  // outlives the timer while a wait is queued
};

}  // namespace

std::unique_ptr<Timer> SteadyClock::make_timer() { return std::make_unique<SteadyTimer>(io_); }

std::chrono::milliseconds SteadyClock::now() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now().time_since_epoch());
}

}  // namespace ddprun
