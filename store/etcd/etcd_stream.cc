#include "store/etcd/etcd_stream.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "common/loop_waits.h"
#include "store/etcd/etcd_client.h"

namespace ddprun::store {
namespace {

using Clock = std::chrono::steady_clock;

// Pauses before opening a stream again while no member takes it.
constexpr std::chrono::milliseconds kFirstRetry{50};
constexpr std::chrono::milliseconds kLastRetry{1000};

}  // namespace

Task<bool> follow_etcd_stream(EtcdStream& stream, Clock::time_point deadline,
                              CancelSignal& cancel) {
  auto pause = kFirstRetry;
  bool broke = false;
  while (Clock::now() < deadline) {
    if (broke) {
      co_await sleep_for(pause, cancel);
      pause = std::min(pause * 2, kLastRetry);
    }
    broke = true;
    int fd = -1;
    try {
      fd = co_await stream.open(cancel);
      if (fd < 0) co_return true;
    } catch (const EtcdRefusedError&) {
      throw;
    } catch (const StoreError& e) {
      spdlog::debug("etcd watch: {}; opening it again in {} ms", e.what(), pause.count());
      continue;
    }
    pause = kFirstRetry;
    while (true) {
      auto quiet_until = std::min(deadline, Clock::now() + stream.silence());
      if (!co_await wait_readable(fd, quiet_until, cancel)) {
        if (Clock::now() >= deadline) co_return false;
        stream.silent();
        broke = false;
        break;
      }
      try {
        if (stream.take()) co_return true;
      } catch (const EtcdRefusedError&) {
        throw;
      } catch (const StoreError& e) {
        spdlog::debug("etcd watch: {}; opening it again in {} ms", e.what(), pause.count());
        break;
      }
    }
  }
  co_return false;
}

}  // namespace ddprun::store
