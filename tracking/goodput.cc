#include "tracking/goodput.h"

#include <algorithm>
#include <cstdio>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/seconds_text.h"

namespace ddprun::tracking {
namespace {

// Counts [from, to] (clamped to be forward) as `category` of attempt `a` and returns
// where it ended.
double take(Goodput::Attempt& a, const char* category, double from, double to) {
  if (to <= from) return from;
  TimeSplit& s = a.split;
  std::string_view c = category;
  double& bucket = c == "startup"      ? s.startup
                   : c == "productive" ? s.productive
                   : c == "lost"       ? s.lost
                   : c == "hang_wait"  ? s.hang_wait
                   : c == "shutdown"   ? s.shutdown
                                       : s.restart;
  bucket += to - from;
  if (!a.segments.empty() && a.segments.back().category == c) {
    a.segments.back().to = to;
  } else {
    a.segments.push_back({category, from, to});
  }
  return to;
}

std::string seconds(double s) { return seconds_text(s); }

}  // namespace

Goodput account_goodput(double start, double end, const std::vector<AttemptSpan>& attempts,
                        SpanOfJob span) {
  Goodput g;
  g.start = start;
  g.end = std::max(start, end);
  double at = start;  // where the accounting has reached
  for (size_t i = 0; i < attempts.size(); ++i) {
    const AttemptSpan& a = attempts[i];
    bool last = i + 1 == attempts.size();
    double until = a.failed ? std::min(*a.failed, g.end) : g.end;
    Goodput::Attempt out{a.attempt, at, last ? g.end : until, {}, {}};
    // Before its first step.
    const char* waiting = i == 0 && span.from_launch ? "startup" : "restart";
    if (!a.first_step || *a.first_step >= until) {
      at = take(out, waiting, at, until);  // no step: all of it went to getting started
    } else {
      g.steps_seen = true;
      at = take(out, waiting, at, *a.first_step);
      if (!a.failed) {
        // An ended job's steps end at its last one; a running job's step runs now.
        bool ended = last && span.job_ended && a.last_step;
        at = take(out, "productive", at, ended ? std::min(*a.last_step, until) : until);
      } else {
        std::optional<double> kept = a.checkpoint && *a.checkpoint <= until ? a.checkpoint : std::nullopt;
        if (kept) at = take(out, "productive", at, *kept);
        double progress = std::min(a.last_step.value_or(at), until);
        at = take(out, "lost", at, progress);
        at = take(out, a.hang ? "hang_wait" : "lost", at, until);
      }
    }
    if (a.checkpoint) g.checkpoint_seen = true;
    // The rest of the last attempt: the job shutting down, or a restart under way.
    if (last) at = take(out, span.job_ended ? "shutdown" : "restart", at, g.end);
    g.job += out.split;
    g.attempts.push_back(std::move(out));
  }
  if (attempts.empty()) (span.from_launch ? g.job.startup : g.job.restart) = g.end - start;
  return g;
}

namespace {

nlohmann::json split_json(const TimeSplit& s, double start, double end) {
  return {{"start", start},
          {"end", end},
          {"goodput", s.goodput()},
          {"startup", s.startup},
          {"productive", s.productive},
          {"lost", s.lost},
          {"hang_wait", s.hang_wait},
          {"restart", s.restart},
          {"shutdown", s.shutdown}};
}

}  // namespace

std::string goodput_json(const Goodput& g) {
  nlohmann::json j = split_json(g.job, g.start, g.end);
  j["steps_seen"] = g.steps_seen;
  j["checkpoint_seen"] = g.checkpoint_seen;
  j["attempts"] = nlohmann::json::array();
  for (const auto& a : g.attempts) {
    nlohmann::json one = split_json(a.split, a.start, a.end);
    one["attempt"] = a.attempt;
    one["segments"] = nlohmann::json::array();
    for (const auto& seg : a.segments) one["segments"].push_back({seg.category, seg.from, seg.to});
    j["attempts"].push_back(std::move(one));
  }
  return j.dump();
}

std::string describe_goodput(const Goodput& g) {
  const TimeSplit& s = g.job;
  if (!g.steps_seen) {
    return "goodput unknown: no step was timed (PyTorch 2 jobs are timed by ddprun; others call "
           "ddprun_tracking.step())";
  }
  char pct[16];
  std::snprintf(pct, sizeof(pct), "%.1f%%", s.goodput() * 100);
  std::string out = std::string("goodput ") + pct + ": start-up " + seconds(s.startup) +
                    ", productive " + seconds(s.productive) + ", lost " + seconds(s.lost) +
                    ", hang wait " + seconds(s.hang_wait) + ", restart " + seconds(s.restart) +
                    ", shutdown " + seconds(s.shutdown);
  if (!g.checkpoint_seen && s.lost > 0) {
    out += " (no checkpoint declared: a failure loses its attempt's every step; "
           "ddprun_tracking.checkpoint() says what is saved)";
  }
  return out;
}

}  // namespace ddprun::tracking
