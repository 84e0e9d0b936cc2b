// Runs the job simulator's seeded schedules (tests/sim/job_sim.h).
//   ddprun_job_sim --schedules=N [--first=S]   N schedules, seeds S.. (default 1)
//   ddprun_job_sim --seed=S                    one schedule, with its whole trace
//   --keep_going                               count every failing schedule instead
// Exits 1 at the first schedule that breaks an invariant, with the command that
// replays it exactly; 2 on a bad argument.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>

#include "tests/sim/job_sim.h"

namespace {

bool flag(const std::string& arg, const std::string& name, uint64_t& value) {
  std::string prefix = "--" + name + "=";
  if (arg.rfind(prefix, 0) != 0) return false;
  std::string text = arg.substr(prefix.size());
  char* end = nullptr;
  value = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0') {
    std::cerr << "ddprun_job_sim: " << arg << ": not a number\n";
    std::exit(2);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t schedules = 1000, first = 1, seed = 0;
  bool one = false, keep_going = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--keep_going") {
      keep_going = true;
      continue;
    }
    if (flag(arg, "schedules", schedules) || flag(arg, "first", first)) continue;
    if (flag(arg, "seed", seed)) {
      one = true;
      continue;
    }
    std::cerr << "ddprun_job_sim: unknown argument " << arg
              << " (--schedules=N [--first=S] | --seed=S)\n";
    return 2;
  }
  if (one) {
    ddprun::sim::Outcome o = ddprun::sim::run_schedule(seed, true);
    for (const auto& line : o.trace) std::cout << line << "\n";
    std::cout << "seed " << seed << ": " << (o.violation.empty() ? "ok" : o.violation) << " ("
              << o.ended << ", " << o.steps << " steps, " << o.faults << " fault(s))\n";
    return o.violation.empty() ? 0 : 1;
  }
  auto start = std::chrono::steady_clock::now();
  std::map<std::string, int> ended;
  uint64_t faults = 0, failing = 0;
  for (uint64_t s = first; s < first + schedules; ++s) {
    ddprun::sim::Outcome o = ddprun::sim::run_schedule(s);
    if (!o.violation.empty()) {
      if (!keep_going || failing == 0) {
        std::cout << "seed " << s << ": " << o.violation << "\nreplay: " << argv[0]
                  << " --seed=" << s << "\n";
      }
      if (!keep_going) return 1;
      ++failing;
      continue;
    }
    ++ended[o.ended.substr(0, o.ended.find(':'))];
    faults += static_cast<uint64_t>(o.faults);
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << schedules << " schedules (seeds " << first << ".." << first + schedules - 1 << "), "
            << faults << " faults, "
            << (failing ? std::to_string(failing) + " broke an invariant" : "every invariant held")
            << ", in " << seconds << " s:";
  for (const auto& [how, n] : ended) std::cout << " " << how << " " << n << ";";
  std::cout << "\n";
  return failing ? 1 : 0;
}
