#include "agent/hang/hang_publish.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <set>

#include <nlohmann/json.hpp>

#include "agent/hang/hang_report.h"

namespace ddprun::agent {

namespace {

// Bytes of stacks the run's `hang` event keeps of one rank.
constexpr size_t kEventStackBytes = 256 << 10;

// The ranks whose reports (with their stacks) the run keeps, 16 at most: the first
// culprits, one rank of each place the others stopped in, then the first others (a
// small job's every rank). A large job's every stack would make one record of hundreds
// of MiB; the report at `report_at` has them all.
std::vector<const RankReport*> ranks_kept(const HangWatch::Verdict& v) {
  constexpr size_t kCulprits = 8, kRanks = 16;
  const std::set<int> culprits(v.diagnosis.culprits.begin(), v.diagnosis.culprits.end());
  std::vector<const RankReport*> kept;
  std::set<std::string> places;
  for (const auto& r : v.ranks) {
    if (kept.size() == kCulprits) break;
    if (culprits.count(r.rank)) kept.push_back(&r);
  }
  for (const RankReport* r : kept) places.insert(r->where);
  for (const auto& r : v.ranks) {
    if (kept.size() == kRanks) break;
    if (places.insert(r.where).second) kept.push_back(&r);
  }
  std::set<const RankReport*> taken(kept.begin(), kept.end());
  for (const auto& r : v.ranks) {  // a small job's every rank
    if (kept.size() == kRanks) break;
    if (!taken.count(&r)) kept.push_back(&r);
  }
  std::sort(kept.begin(), kept.end(),
            [](const RankReport* a, const RankReport* b) { return a->rank < b->rank; });
  return kept;
}

}  // namespace

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
  for (const RankReport* r : ranks_kept(v)) ranks.push_back(to_json(*r));
  // A node's own ranks' stacks come whole (gdb's of a thousand threads): cut, so that
  // the record stays far below the tracking link's frame (64 MiB).
  cut_stacks(ranks, ranks.size() * kEventStackBytes, v.report_at);
  observer->hang(attempt, nlohmann::json{{"reason", reason},
                                         {"culprits", v.diagnosis.culprits},
                                         {"why", v.diagnosis.why},
                                         {"summary", v.diagnosis.summary},
                                         {"ranks", ranks},
                                         {"ranks_total", v.ranks.size()},
                                         {"report_at", v.report_at}}
                              .dump());
}

}  // namespace ddprun::agent
