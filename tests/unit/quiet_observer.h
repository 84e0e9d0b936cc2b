#pragma once

#include <sys/types.h>

#include <map>
#include <string>

#include "tracking/run_observer.h"

namespace ddprun::testing {

/// A run that hears everything and keeps nothing: a test's observer overrides what it
/// keeps.
class QuietObserver : public tracking::RunObserver {
 public:
  std::string attach(const std::string&, bool) override { return ""; }
  void add_worker_env(int, int, int, std::map<std::string, std::string>&) override {}
  void rendezvous_complete(const tracking::FormedRound&) override {}
  void worker_started(int, int, int, int, pid_t) override {}
  void worker_exited(int, int, int, int, int) override {}
  void hang(int, const std::string&) override {}
  void round_over(int, const std::string&, const std::string&) override {}
  void attempt_ended() override {}
  void finished(const std::string&, int, const std::string&) override {}
};

}  // namespace ddprun::testing
