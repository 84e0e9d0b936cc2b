#pragma once

#include <chrono>
#include <functional>
#include <utility>

#include "common/cancel_signal.h"
#include "common/coro.h"
#include "store/etcd/etcd_client.h"

namespace ddprun::store {

/// A watch stream of etcd as the loop follows it: EtcdClient's loop watch (the
/// rendezvous state) or EtcdStore's wait for keys, which is built on it.
class EtcdStream {
 public:
  virtual ~EtcdStream() = default;
  /// (Re)opens the stream on the current member and returns its descriptor, or -1 when
  /// what is waited for is there already. A StoreError has moved on to the next member.
  virtual Task<int> open(CancelSignal& cancel) = 0;
  /// Takes what arrived, without blocking: true once what is waited for came. A
  /// StoreError: the stream broke, and it has moved on to the next member.
  virtual bool take() = 0;
  /// The stream stayed silent for silence() (a healthy stream with nothing to say is,
  /// and so is a frozen member's): moves on to the next member.
  virtual void silent() = 0;
  virtual std::chrono::milliseconds silence() const = 0;
};

/// The loop watch of `client` (begun already: EtcdClient::begin_loop_watch()), each
/// event handed to `on_event` until it returns false.
class EtcdEventStream : public EtcdStream {
 public:
  EtcdEventStream(EtcdClient& client, std::function<bool(const EtcdEvent&)> on_event)
      : client_(client), on_event_(std::move(on_event)) {}
  Task<int> open(CancelSignal& cancel) override { return client_.open_loop_watch(cancel); }
  bool take() override { return client_.read_loop_watch(on_event_); }
  void silent() override { client_.skip_member("the watch stream stayed silent"); }
  std::chrono::milliseconds silence() const override { return client_.loop_watch_silence(); }

 private:
  EtcdClient& client_;
  std::function<bool(const EtcdEvent&)> on_event_;
};

/// Follows `stream` from a coroutine on a loop, every wait the loop's completion, until
/// what is waited for is there (true) or `deadline` passes (false). After a StoreError
/// it opens the stream again after a pause (50 ms, doubling up to 1 s); after a silence
/// at once (the next member replays what was missed). Throws EtcdRefusedError (a
/// compacted revision, a refusal) as open() and take() do, Error once `cancel` is
/// cancelled.
Task<bool> follow_etcd_stream(EtcdStream& stream,
                              std::chrono::steady_clock::time_point deadline, CancelSignal& cancel);

}  // namespace ddprun::store
