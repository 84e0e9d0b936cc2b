#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tracking/run_store.h"

namespace ddprun::tracking {

/// An agent's own record stream, as JSON lines (see ingest_lines): the primary's
/// launcher.jsonl in the run directory, another agent's agent.jsonl in its part.
/// Records are collected, then written by flush() in one write (O_APPEND): a reader
/// never sees half a record. The file is made by the first write, or at once by
/// open_now(). Not thread-safe: the tracker's pass thread only.
class OwnRecords {
 public:
  OwnRecords() = default;
  ~OwnRecords();
  OwnRecords(const OwnRecords&) = delete;
  OwnRecords& operator=(const OwnRecords&) = delete;

  /// Where the records go; until it is set, flush() drops them.
  void set_path(std::string path) { path_ = std::move(path); }
  /// Makes the file now. Throws TrackingError naming it.
  void open_now();

  void add(const nlohmann::json& record);
  /// The event's data (JSON in one line, as the agent makes it) goes in as it is.
  void add_event(const Event& e);
  void add_system(int node, double wall, const std::vector<std::pair<std::string, double>>& v);

  /// Writes what was added. Throws TrackingError naming the file (the records are
  /// dropped: reported once by the caller, never retried).
  void flush();

 private:
  std::string path_;
  int fd_ = -1;
  std::string lines_;
};

}  // namespace ddprun::tracking
