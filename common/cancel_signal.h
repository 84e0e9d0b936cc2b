#pragma once

#include <functional>
#include <string>
#include <utility>

#include "common/error.h"

namespace ddprun {

/// Cancels the waits of one coroutine on a loop (see common/loop_waits.h): cancel()
/// ends the wait in progress at once (it completes, aborted, and throws Error) and
/// every later one before it begins. A real cancel: nothing is interrupted from
/// another thread, no connection is shut down to unblock a call.
///
/// Thread-safety: the loop's thread only.
class CancelSignal {
 public:
  explicit CancelSignal(std::string what = "cancelled") : what_(std::move(what)) {}
  CancelSignal(const CancelSignal&) = delete;
  CancelSignal& operator=(const CancelSignal&) = delete;

  void cancel() {
    cancelled_ = true;
    if (auto abort = std::exchange(abort_, nullptr)) abort();
  }
  bool cancelled() const { return cancelled_; }
  /// Throws Error(what) once cancel() was called.
  void check() const {
    if (cancelled_) throw Error(what_);
  }

  /// While it lives, cancel() calls `abort` (which cancels the timer or descriptor
  /// the wait in progress waits on). One at a time.
  class Hook {
   public:
    Hook(CancelSignal& signal, std::function<void()> abort) : signal_(signal) {
      signal_.abort_ = std::move(abort);
    }
    ~Hook() { signal_.abort_ = nullptr; }
    Hook(const Hook&) = delete;
    Hook& operator=(const Hook&) = delete;

   private:
    CancelSignal& signal_;
  };

 private:
  std::string what_;
  bool cancelled_ = false;
  std::function<void()> abort_;
};

}  // namespace ddprun
