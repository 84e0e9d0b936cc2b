#pragma once

#include <chrono>
#include <functional>

#include "common/cancel_signal.h"
#include "common/coro.h"

namespace ddprun::store {

/// A watch stream of etcd as the loop follows it: EtcdClient's loop watch (the
/// rendezvous state) or EtcdStore's wait for keys, which is built on it.
struct EtcdStream {
  /// (Re)opens the stream on the current member and returns its descriptor, or -1 when
  /// what is waited for is there already. A StoreError has moved on to the next member.
  std::function<int()> open;
  /// Takes what arrived, without blocking: true once what is waited for came. A
  /// StoreError: the stream broke, and it has moved on to the next member.
  std::function<bool()> take;
  /// The stream stayed silent for `silence` (a healthy stream with nothing to say is,
  /// and so is a frozen member's): moves on to the next member.
  std::function<void()> silent;
  std::chrono::milliseconds silence{1000};
};

/// Follows `stream` from a coroutine on a loop, every wait the loop's completion, until
/// what is waited for is there (true) or `deadline` passes (false). After a StoreError
/// it opens the stream again after a pause (50 ms, doubling up to 1 s); after a silence
/// at once (the next member replays what was missed). Throws EtcdRefusedError (a
/// compacted revision, a refusal) as open() and take() do, Error once `cancel` is
/// cancelled.
Task<bool> follow_etcd_stream(const EtcdStream& stream,
                              std::chrono::steady_clock::time_point deadline, CancelSignal& cancel);

}  // namespace ddprun::store
