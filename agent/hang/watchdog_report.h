#pragma once

#include <string>

#include "agent/hang/process_inspector.h"
#include "agent/hang/timer_watchdog.h"

namespace ddprun::agent {

/// What is said of a worker the watchdog reaps, with its stacks taken just before.
struct WatchdogReport {
  std::string where;      // "step (train.py:12: time.sleep(60))"; "" when no stack came
  std::string reaped_by;  // the failure summary's "reaped by the worker watchdog: ..."
  std::string event;      // the run's `watchdog` event (JSON): the expiry, `where`, stacks
};

WatchdogReport watchdog_report(const TimerWatchdog::Expiry& e, const CapturedStacks& stacks);

}  // namespace ddprun::agent
