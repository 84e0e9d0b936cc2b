// Build-time tool: writes the database of an empty run (the schema, its version, WAL
// mode) to the path given, for RunStore to copy when it makes a run: a launch then
// writes one file instead of compiling the schema and switching journal modes.
#include <sqlite3.h>

#include <cstdio>
#include <string>

#include "tracking/run_schema.h"

namespace {

bool exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) == SQLITE_OK) return true;
  std::fprintf(stderr, "make_run_image: %s\n", err ? err : "unknown error");
  sqlite3_free(err);
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_run_image OUTPUT\n");
    return 2;
  }
  std::remove(argv[1]);
  sqlite3* db = nullptr;
  if (sqlite3_open(argv[1], &db) != SQLITE_OK) {
    std::fprintf(stderr, "make_run_image: cannot create %s\n", argv[1]);
    sqlite3_close(db);
    return 1;
  }
  // Closing the only connection folds the WAL into the file and removes it: what
  // stays is one file whose header says WAL.
  bool ok = exec(db, "PRAGMA journal_mode=WAL;") &&
            exec(db, std::string("BEGIN;") + ddprun::tracking::kRunSchema +
                         "INSERT INTO meta VALUES ('schema_version', '" +
                         std::to_string(ddprun::tracking::kRunSchemaVersion) + "'); COMMIT;");
  if (sqlite3_close(db) != SQLITE_OK) ok = false;
  return ok ? 0 : 1;
}
