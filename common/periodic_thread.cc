#include "common/periodic_thread.h"

#include "common/thread_name.h"

namespace ddprun {

PeriodicThread::PeriodicThread(std::string name, std::chrono::milliseconds interval, First first,
                               Tick tick)
    : thread_([this, name = std::move(name), interval, first, tick = std::move(tick)] {
        run(name, interval, first, tick);
      }) {}

void PeriodicThread::run(const std::string& name, std::chrono::milliseconds interval, First first,
                         const Tick& tick) {
  name_this_thread(name.c_str());
  std::unique_lock lock(mutex_);
  auto pause = [&] { return wake_.wait_for(lock, interval, [this] { return stopping_.load(); }); };
  if (first == First::kAfterInterval && pause()) return;
  while (!stopping_) {
    lock.unlock();
    bool go_on = tick(*this);
    lock.lock();
    if (!go_on || pause()) return;
  }
}

bool PeriodicThread::rest(std::chrono::milliseconds pause) const {
  std::unique_lock lock(mutex_);
  return wake_.wait_for(lock, pause, [this] { return stopping_.load(); });
}

void PeriodicThread::stop(const std::function<void()>& interrupt) {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (interrupt) interrupt();
  if (thread_.joinable()) thread_.join();
}

}  // namespace ddprun
