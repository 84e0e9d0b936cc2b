#include "rendezvous/store_waits.h"

#include <algorithm>

#include "common/loop_waits.h"
#include "rendezvous/tcp_store_client.h"

namespace ddprun::rendezvous {

Task<bool> wait_for_keys(Store& store, std::vector<std::string> keys,
                         std::chrono::milliseconds timeout, CancelSignal& cancel) {
  cancel.check();
  auto* tcp = dynamic_cast<TcpStoreClient*>(&store);
  if (!tcp) {
    // A store of this process, in tests: looked at again and again, a few milliseconds
    // apart at most, so that the loop goes on meanwhile.
    auto deadline = std::chrono::steady_clock::now() + timeout;
    std::chrono::microseconds pause{250};
    while (!store.check(keys)) {
      auto left = deadline - std::chrono::steady_clock::now();
      if (left <= left.zero()) co_return false;
      co_await sleep_for(
          std::min(pause, std::chrono::duration_cast<std::chrono::microseconds>(left)), cancel);
      pause = std::min(pause * 2, std::chrono::microseconds(16'000));
    }
    co_return true;
  }
  int fd = tcp->start_wait(keys);
  bool answered = false;
  try {
    answered = co_await wait_readable(fd, std::chrono::steady_clock::now() + timeout, cancel);
  } catch (...) {
    tcp->abandon_wait();
    throw;
  }
  if (!answered) co_return tcp->cancel_wait();
  tcp->finish_wait();
  co_return true;
}

std::vector<std::string> values_now(Store& store, const std::vector<std::string>& keys) {
  std::vector<std::string> values;
  values.reserve(keys.size());
  for (auto& v : store.get_now(keys)) values.push_back(std::move(v).value_or(""));
  return values;
}

}  // namespace ddprun::rendezvous
