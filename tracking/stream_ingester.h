#pragma once

#include <string>

#include "tracking/record_lines.h"
#include "tracking/run_store.h"

namespace ddprun::tracking {

/// Where one worker process writes its records in one attempt; ddprun passes the
/// path to the worker as DDPRUN_TRACKING_STREAM.
std::string stream_path(const std::string& run_dir, int node, int rank, int attempt);

/// Copies the records workers appended to the stream files of a directory
/// (`<dir>/streams/*.jsonl`, plus `<dir>/agent.jsonl` when there is one) into a run
/// store, each under `key_prefix` + its file name, resuming where it stopped; only
/// complete lines are taken (see ingest_lines). In a run's own directory (kRun) the
/// launcher's stream (kLauncherStream) is taken too, first. Not thread-safe.
class StreamIngester {
 public:
  using Stats = IngestStats;
  enum class Dir {
    kNode,  // a node's streams: a part, or what a forwarder sends
    kRun,   // the run's own directory: its launcher's records too
  };

  StreamIngester(RunStore& store, std::string dir, std::string key_prefix = "",
                 Dir kind = Dir::kNode);

  /// Ingests what is new in every stream file in one transaction (undone as a whole
  /// on a database error). With `final` the writers are gone: an unterminated last
  /// line is a torn record (counted, never stored).
  Stats drain(bool final);

 private:
  RunStore& store_;
  std::string dir_;
  std::string key_prefix_;
  Dir kind_;
};


}  // namespace ddprun::tracking
