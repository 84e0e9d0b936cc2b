#pragma once

// The run database's schema: one source for the build-time image of an empty run
// (tracking/make_run_image.cc) and for RunStore's version check.
namespace ddprun::tracking {

/// Stored in the `meta` table as "schema_version"; a run of another version is refused.
inline constexpr int kRunSchemaVersion = 1;

inline constexpr const char* kRunSchema = R"(
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE events (id INTEGER PRIMARY KEY, wall REAL, kind TEXT, node INT,
  rank INT, attempt INT, data TEXT);
CREATE TABLE metrics (node INT, rank INT, attempt INT, seq INT, wall REAL,
  step INT, key TEXT, value REAL);
CREATE TABLE config (node INT, rank INT, attempt INT, key TEXT, value TEXT);
CREATE TABLE summaries (node INT, rank INT, attempt INT, key TEXT, value TEXT);
CREATE TABLE system_metrics (node INT, wall REAL, key TEXT, value REAL);
CREATE TABLE streams (path TEXT PRIMARY KEY, offset INT);
)";

}  // namespace ddprun::tracking
