#include "rendezvous/round/shared_max.h"

#include <algorithm>

#include "common/value_parsers.h"

namespace ddprun::rendezvous {

Task<int64_t> raise_to(store::LoopStore& store, std::string key, int64_t mine,
                       CancelSignal& cancel) {
  std::string want = std::to_string(mine);
  std::string expected;  // "": not there yet
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string now = co_await store.compare_set(key, expected, want, cancel);
    int64_t theirs = 0;
    if (now == want || (to_int64(now, theirs) && theirs >= mine)) co_return std::max(mine, theirs);
    expected = now;  // smaller, or not a number: replaced
  }
  co_return mine;
}

}  // namespace ddprun::rendezvous
