#include "agent/hang/watchdog_report.h"

#include <iomanip>
#include <sstream>

#include <nlohmann/json.hpp>

#include "agent/failure_summary.h"
#include "agent/hang/hang_report.h"

namespace ddprun::agent {

WatchdogReport watchdog_report(const TimerWatchdog::Expiry& e, const CapturedStacks& stacks) {
  RankReport r;
  r.python_stack = stacks.python;
  r.native_stack = stacks.native;
  r.stack_note = stacks.note;
  describe_stacks(r);
  bool known = !r.function.empty();

  WatchdogReport out;
  if (known) out.where = r.where;
  std::ostringstream why;
  why << "reaped by the worker watchdog: scope " << e.scope << " expired after " << std::fixed
      << std::setprecision(1) << e.length_seconds << " s";
  if (known) why << ", in " << r.where;
  out.reaped_by = why.str();
  nlohmann::json event{{"scope", e.scope},
                       {"signal", signal_name(e.signal)},
                       {"pid", e.pid},
                       {"local_rank", e.local_rank},
                       {"timer_seconds", e.length_seconds},
                       {"overdue_seconds", e.overdue_seconds},
                       {"where", r.where}};  // "unknown (why)" without a stack
  if (!r.python_stack.empty()) event["python_stack"] = r.python_stack;
  if (!r.native_stack.empty()) event["native_stack"] = r.native_stack;
  if (!r.stack_note.empty()) event["stack_note"] = r.stack_note;
  out.event = event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return out;
}

}  // namespace ddprun::agent
