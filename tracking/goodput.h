#pragma once

#include <optional>
#include <string>
#include <vector>


namespace ddprun::tracking {

/// Where the seconds of a job went, each in one category.
struct TimeSplit {
  double startup = 0;     // the launch to the first step
  double productive = 0;  // steps kept: up to the last checkpoint before a failure, or all
  double lost = 0;        // steps redone: after the last checkpoint, up to the failure
  double hang_wait = 0;   // a hang: the last step to its detection
  double restart = 0;     // a failure to the next attempt's first step (stop, rendezvous,
                          // spawn, initialise, load)
  double shutdown = 0;    // an ended job's last step (or final failure) to its end
  double total() const { return startup + productive + lost + hang_wait + restart + shutdown; }
  TimeSplit& operator+=(const TimeSplit& s) {
    startup += s.startup;
    productive += s.productive;
    lost += s.lost;
    hang_wait += s.hang_wait;
    restart += s.restart;
    shutdown += s.shutdown;
    return *this;
  }
  /// productive / total (0 for an empty span).
  double goodput() const { return total() > 0 ? productive / total() : 0; }
};

/// One round's attempt as the run saw it, in wall seconds since the epoch.
struct AttemptSpan {
  int attempt = 0;  // its restart count
  double start = 0;  // the round formed
  /// When it ended badly: its first failing worker's exit, its hang's detection, or its
  /// round's end (a lost node); none: it ended the job well, or runs still.
  std::optional<double> failed;
  bool hang = false;
  // The steps of its ranks (timed by ddprun's hook or ddprun_tracking.step()): the
  // first and the last one's end, and the last checkpoint declared durable.
  std::optional<double> first_step, last_step, checkpoint;
};

/// A job's goodput accounting: every second from its launch to its end in one category,
/// per attempt and in all.
struct Goodput {
  double start = 0, end = 0;
  TimeSplit job;
  /// A stretch of time in one category ("startup", "productive", "lost", "hang_wait",
  /// "restart", "shutdown"), wall clock: the dashboard's timeline.
  struct Segment {
    std::string category;
    double from = 0, to = 0;
  };
  struct Attempt {
    int attempt = 0;
    double start = 0, end = 0;  // from the last failure (or the launch) to its own
    TimeSplit split;
    std::vector<Segment> segments;  // in order, end to end
  };
  std::vector<Attempt> attempts;
  bool steps_seen = false;       // some attempt timed a step: the accounting means something
  bool checkpoint_seen = false;  // some attempt declared a checkpoint
};

/// How a span to account relates to the job: where it starts, whether the job has ended.
struct SpanOfJob {
  /// `start` is the job's launch, so the first attempt's wait for its first step is
  /// start-up; otherwise an earlier failure, and that wait a restart (an agent accounts
  /// one round at a time so that nothing grows with restarts).
  bool from_launch = true;
  /// `end` is the job's end: after the last attempt's last step (or its failure) the job
  /// shut down. Otherwise it runs: its running attempt's time is productive up to `end`.
  bool job_ended = false;
};

/// Accounts the span [start, end] over `attempts` (in order): see TimeSplit. Pure.
Goodput account_goodput(double start, double end, const std::vector<AttemptSpan>& attempts,
                        SpanOfJob span = {});

/// {"goodput", "start", "end", "startup", "productive", "lost", "hang_wait", "restart",
/// "shutdown",
/// "steps_seen", "checkpoint_seen", "attempts": [{"attempt", "start", "end", ...,
/// "segments": [[category, from, to], ...]}]}: the
/// dashboard's and the exports' shape (seconds; wall clock for start and end).
std::string goodput_json(const Goodput& g);

/// "goodput 81.2%: start-up 3.1 s, productive 120.4 s, lost 12.0 s, hang wait 0 s,
/// restart 8.3 s, shutdown 0.4 s" (no steps seen: says so).
std::string describe_goodput(const Goodput& g);

}  // namespace ddprun::tracking
