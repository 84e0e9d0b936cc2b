#pragma once

#include "common/error.h"

namespace ddprun::rendezvous {

/// The run has been closed: a late agent gets this instead of waiting.
class RendezvousClosedError : public Error {
 public:
  using Error::Error;
};

/// This node waited as a hot spare and the job ended without needing it: not a
/// failure of this node. `job_failed` says how the job ended.
class SpareNotNeeded : public Error {
 public:
  SpareNotNeeded(const std::string& what, bool job_failed) : Error(what), job_failed_(job_failed) {}
  bool job_failed() const { return job_failed_; }

 private:
  bool job_failed_;
};

}  // namespace ddprun::rendezvous
