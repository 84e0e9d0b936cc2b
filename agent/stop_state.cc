#include "agent/stop_state.h"

#include <utility>

namespace ddprun::agent {

void StopState::stop(int sig, std::function<void()> on_deadline) {
  signal_ = sig;
  deadline_->start(kLastWordsWait, [this, on_deadline = std::move(on_deadline)] {
    deadline_passed_ = true;
    after_stop_.cancel();
    on_deadline();
  });
}

void StopState::begin_wait(std::function<void()> cancel) {
  cancel_wait_ = std::move(cancel);
  if (signal_ != 0) cancel_wait_();
}

}  // namespace ddprun::agent
