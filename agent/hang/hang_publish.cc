#include "agent/hang/hang_publish.h"

#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "agent/hang/hang_report.h"

namespace ddprun::agent {

void publish_hang(const HangWatch::Verdict& v, const std::string& trigger,
                  const std::string& reason, const std::string& path, int attempt,
                  tracking::RunObserver* observer) {
  std::string report = format_hang_report(trigger, v.ranks, v.diagnosis);
  if (v.own_ranks_only) {
    std::string whole = v.report_at.empty() ? "" : "; every rank's are in " + v.report_at;
    report.insert(report.find('\n') + 1,
                  "(the stacks below are this node's ranks'" + whole + ")\n");
  }
  std::ofstream(path) << report;
  std::cerr << "ddprun: " << report.substr(0, report.find('\n')) << "\n"
            << v.diagnosis.summary << (v.missing.empty() ? "" : "  " + v.missing + "\n")
            << (v.own_ranks_only
                    ? "  stacks of this node's ranks: " + path +
                          (v.report_at.empty() ? "" : "; of every rank: " + v.report_at)
                    : "  stacks of every rank: " + path)
            << "\n"
            << std::flush;
  if (!observer || v.own_ranks_only) return;  // the judging node has the run keep it
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& r : v.ranks) ranks.push_back(to_json(r));
  observer->hang(attempt, nlohmann::json{{"reason", reason},
                                         {"culprits", v.diagnosis.culprits},
                                         {"why", v.diagnosis.why},
                                         {"summary", v.diagnosis.summary},
                                         {"ranks", ranks}}
                              .dump());
}

}  // namespace ddprun::agent
