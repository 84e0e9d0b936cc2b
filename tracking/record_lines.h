#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tracking/run_store.h"

namespace ddprun::tracking {

/// Who wrote a stream: a worker (node, rank, attempt), or an agent's own records
/// (events and system metrics of a node that forwards to the primary: all -1). The
/// primary launcher's own stream (`launcher`) may also describe the run.
struct StreamOrigin {
  int node = -1;
  int rank = -1;
  int attempt = -1;
  bool launcher = false;
};

/// What an ingestion pass stored and skipped.
struct IngestStats {
  int64_t points = 0;
  int64_t records = 0;
  int64_t bad_lines = 0;     // complete lines that are not a valid record (skipped)
  int64_t torn_records = 0;  // an unterminated last line once its writer is gone

  IngestStats& operator+=(const IngestStats& o) {
    points += o.points;
    records += o.records;
    bad_lines += o.bad_lines;
    torn_records += o.torn_records;
    return *this;
  }
};

/// The name of an agent's own record stream in a forwarding node's directory.
inline constexpr const char* kAgentStream = "agent.jsonl";
/// The name of the primary launcher's own record stream in the run directory: the
/// run's description, its lifecycle events, system metrics and its end. Never a name
/// that parse_stream_name() accepts: no worker, part or forwarding peer writes it.
inline constexpr const char* kLauncherStream = "launcher.jsonl";

/// The stream files of a directory, by name: `<dir>/streams/*.jsonl` of workers and
/// `<dir>/agent.jsonl`, whatever exists of them.
std::vector<std::pair<std::string, std::string>> stream_files(const std::string& dir);

/// Reads a stream file name: `n<node>.r<rank>.a<attempt>.jsonl` (a worker's) or
/// `agent.jsonl`. False for anything else.
bool parse_stream_name(const std::string& name, StreamOrigin& origin);

/// Stores the complete lines at the start of `data` (one JSON record each) and
/// returns how many bytes they take. Records: {"k":"log","seq":N,"t":wall,"step":S,
/// "d":{key:number}}, {"k":"config"|"summary","d":{..}}, and an agent's
/// {"k":"event","t":..,"kind":..,"node":..,"rank":..,"attempt":..,"d":{..}} and
/// {"k":"sys","t":..,"node":..,"d":{key:number}}; from the launcher's own stream only,
/// {"k":"meta","d":{key:string}} (the run's description and status). With `final` the writer is gone:
/// an unterminated tail is a torn record, counted and consumed but never stored.
size_t ingest_lines(RunStore& store, std::string_view data, const StreamOrigin& origin,
                    bool final, IngestStats& stats);

/// Ingests what is new in one stream file, resuming at the offset the store keeps
/// under `key` and moving it past what was taken. The caller owns the transaction.
void ingest_stream_file(RunStore& store, const std::string& key, const std::string& path,
                        const StreamOrigin& origin, bool final, IngestStats& stats);

/// The bytes of `path` from `offset` to its end, or at most `max` of them ("" when it
/// cannot be read).
std::string read_from(const std::string& path, int64_t offset,
                      size_t max = std::string::npos);

}  // namespace ddprun::tracking
