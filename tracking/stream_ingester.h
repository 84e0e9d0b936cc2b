#pragma once

#include <cstdint>
#include <string>

#include "tracking/run_store.h"

namespace ddprun::tracking {

/// Where one worker process writes its records in one attempt; ddprun passes the
/// path to the worker as DDPRUN_TRACKING_STREAM.
std::string stream_path(const std::string& run_dir, int node, int rank, int attempt);

/// Copies the records workers appended to their stream files into the run store.
/// A stream is one JSON object per line: {"k":"log","seq":N,"t":wall,"step":S,"d":{..}}
/// ("config" and "summary" records carry only "d"). Ingestion resumes where it
/// stopped; only complete lines are taken. Not thread-safe.
class StreamIngester {
 public:
  struct Stats {
    int64_t points = 0;
    int64_t records = 0;
    int64_t bad_lines = 0;     // complete lines that are not a valid record (skipped)
    int64_t torn_records = 0;  // an unterminated last line once its writer is gone
  };

  StreamIngester(RunStore& store, std::string run_dir);

  /// Ingests what is new in every stream file. With `final` the writers are gone: an
  /// unterminated last line is a torn record (counted, never stored).
  Stats drain(bool final);

  const Stats& totals() const { return totals_; }

 private:
  void ingest_file(const std::string& path, int node, int rank, int attempt, bool final,
                   Stats& stats);

  RunStore& store_;
  std::string run_dir_;
  Stats totals_;
};

}  // namespace ddprun::tracking
