#include "tracking/run_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "common/write_fully.h"
#include "tracking/run_image.h"
#include "tracking/run_schema.h"

namespace ddprun::tracking {
namespace {

// Statements prepared for one call and finalized by RAII, or one kept by the store
// for many calls, reset by RAII.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql, const std::string& path) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK) {
      throw TrackingError(path + ": " + sqlite3_errmsg(db));
    }
  }
  Statement(sqlite3* db, sqlite3_stmt* kept) : db_(db), stmt_(kept), kept_(true) {}
  ~Statement() {
    if (!kept_) {
      sqlite3_finalize(stmt_);
      return;
    }
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  /// `v` must stay alive until the statement is stepped (it is not copied).
  Statement& bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_STATIC);
    return *this;
  }
  Statement& bind(int i, int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Statement& bind(int i, int v) { return bind(i, static_cast<int64_t>(v)); }
  Statement& bind(int i, double v) {
    sqlite3_bind_double(stmt_, i, v);
    return *this;
  }
  Statement& bind_null(int i) {
    sqlite3_bind_null(stmt_, i);
    return *this;
  }
  /// True while rows come; throws on error.
  bool step(const std::string& path) {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw TrackingError(path + ": " + sqlite3_errmsg(db_));
  }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  std::string text(int col) const {
    auto* t = sqlite3_column_text(stmt_, col);
    return t ? reinterpret_cast<const char*>(t) : "";
  }
  int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }
  bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  bool kept_ = false;
};

// The columns of a stored point, in the order visit_points reads them.
constexpr const char* kPointColumns =
    "SELECT node, rank, attempt, seq, wall, step, key, value FROM metrics";

// Every row of a statement that selects kPointColumns, one point at a time.
void visit_points(Statement& s, const std::string& path,
                  const std::function<void(const MetricPoint&)>& visit) {
  MetricPoint p;
  while (s.step(path)) {
    p.node = static_cast<int>(s.integer(0));
    p.rank = static_cast<int>(s.integer(1));
    p.attempt = static_cast<int>(s.integer(2));
    p.seq = s.integer(3);
    p.wall = s.real(4);
    p.step = s.is_null(5) ? std::nullopt : std::optional<int64_t>(s.integer(5));
    p.key = s.text(6);
    p.value = s.real(7);
    visit(p);
  }
}

}  // namespace

// Written under a name of its own, then linked into place: a launcher killed meanwhile
// leaves no run.db at all (a run whose launcher died as it started), never a part of one
// that readers would take for a database.
bool make_empty_run(const std::string& run_dir) {
  std::string path = run_dir + "/run.db";
  std::string part = path + ".new." + std::to_string(::getpid());
  std::string_view image = run_image("empty_run.db");
  int fd = ::open(part.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0 || !write_fully(fd, image.data(), image.size())) {
    int err = errno;
    if (fd >= 0) ::close(fd);
    ::unlink(part.c_str());
    throw TrackingError("cannot write " + part + ": " + std::strerror(err));
  }
  ::close(fd);
  bool made = ::link(part.c_str(), path.c_str()) == 0;
  int err = errno;
  std::error_code ec;
  if (!made && err == EEXIST && std::filesystem::file_size(path, ec) == 0 && !ec) {
    // An empty run.db an older build's crash left: replaced whole.
    made = ::rename(part.c_str(), path.c_str()) == 0;
    err = errno;
  }
  ::unlink(part.c_str());
  if (!made && err != EEXIST) {
    throw TrackingError("cannot create " + path + ": " + std::strerror(err));
  }
  return made;
}

RunStore::RunStore(const std::string& run_dir, Open mode) : path_(run_dir + "/run.db") {
  // A new run is the built-in image written out: no schema to compile, no journal
  // mode to switch.
  bool made = mode == Open::kNew || (mode == Open::kCreate && make_empty_run(run_dir));
  // One connection per thread (NOMUTEX): no lock taken on every call.
  int flags = (mode == Open::kReadOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) |
              SQLITE_OPEN_NOMUTEX;
  if (sqlite3_open_v2(path_.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw TrackingError("cannot open " + path_ + ": " + why);
  }
  try {
    configure(mode, made);
  } catch (...) {
    sqlite3_close(db_);  // no destructor runs for a store never made
    throw;
  }
}

void RunStore::configure(Open mode, bool made) {
  sqlite3_busy_timeout(db_, 5000);
  // The WAL is folded into run.db by whoever opens it next, not by a sync at every
  // close (a launch pays no fsync to end a run).
  sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  if (made) {
    // The built-in image: already in WAL mode, with this build's schema. Its first
    // transaction starts the WAL and needs no fsync (a crash then leaves a run with no
    // records): synchronous from the first commit on.
    exec("PRAGMA synchronous=OFF; PRAGMA cache_size=-16384;");
    sync_after_commit_ = true;
    return;
  }
  exec(mode == Open::kReadOnly
           ? "PRAGMA cache_size=-16384;"
           : "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-16384;");
  auto version = meta("schema_version");
  if (!version || std::stoi(*version) != kRunSchemaVersion) {
    throw TrackingError(path_ + ": unsupported schema version " + version.value_or("(none)"));
  }
}

RunStore::~RunStore() {
  for (sqlite3_stmt* s : {insert_one_, insert_batch_, set_meta_, add_event_}) sqlite3_finalize(s);
  sqlite3_close(db_);
}

sqlite3_stmt* RunStore::prepared(sqlite3_stmt*& stmt, const char* sql) {
  if (!stmt &&
      sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr) != SQLITE_OK) {
    throw TrackingError(path_ + ": " + sqlite3_errmsg(db_));
  }
  return stmt;
}

void RunStore::exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string why = err ? err : "unknown error";
    sqlite3_free(err);
    throw TrackingError(path_ + ": " + why);
  }
}

// IMMEDIATE: the write lock is taken (or waited for) up front. A deferred transaction
// that reads first could not upgrade once another connection has written.
void RunStore::begin() { exec("BEGIN IMMEDIATE"); }
void RunStore::commit() {
  flush_points();
  exec("COMMIT");
  if (sync_after_commit_) {
    sync_after_commit_ = false;
    exec("PRAGMA synchronous=NORMAL;");
  }
}

void RunStore::rollback() noexcept {
  pending_count_ = 0;
  if (!sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

void RunStore::set_meta(const std::string& key, const std::string& value) {
  Statement s(db_, prepared(set_meta_, "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)"));
  s.bind(1, key).bind(2, value).step(path_);
}

std::optional<std::string> RunStore::meta(const std::string& key) {
  Statement s(db_, "SELECT value FROM meta WHERE key = ?", path_);
  s.bind(1, key);
  if (!s.step(path_)) return std::nullopt;
  return s.text(0);
}

void RunStore::add_event(const Event& e) {
  Statement s(db_, prepared(add_event_,
                            "INSERT INTO events (wall, kind, node, rank, attempt, "
                            "data) VALUES (?,?,?,?,?,?)"));
  s.bind(1, e.wall).bind(2, e.kind).bind(3, e.node).bind(4, e.rank).bind(5, e.attempt);
  s.bind(6, e.data_json).step(path_);
}

std::vector<Event> RunStore::events(const std::string& kind) {
  Statement s(db_,
              kind.empty() ? "SELECT wall, kind, node, rank, attempt, data FROM events ORDER BY wall, id"
                           : "SELECT wall, kind, node, rank, attempt, data FROM events WHERE kind = ? "
                             "ORDER BY wall, id",
              path_);
  if (!kind.empty()) s.bind(1, kind);
  std::vector<Event> out;
  while (s.step(path_)) {
    out.push_back({s.real(0), s.text(1), static_cast<int>(s.integer(2)),
                   static_cast<int>(s.integer(3)), static_cast<int>(s.integer(4)), s.text(5)});
  }
  return out;
}

int64_t RunStore::count_events(const std::string& kind) {
  Statement s(db_, "SELECT COUNT(*) FROM events WHERE kind = ?", path_);
  s.bind(1, kind).step(path_);
  return s.integer(0);
}

std::optional<Event> RunStore::last_event(const std::string& kind) {
  Statement s(db_,
              "SELECT wall, kind, node, rank, attempt, data FROM events WHERE kind = ? "
              "ORDER BY wall DESC, id DESC LIMIT 1",
              path_);
  s.bind(1, kind);
  if (!s.step(path_)) return std::nullopt;
  return Event{s.real(0),
               s.text(1),
               static_cast<int>(s.integer(2)),
               static_cast<int>(s.integer(3)),
               static_cast<int>(s.integer(4)),
               s.text(5)};
}

double RunStore::last_record_wall() {
  Statement s(db_,
              "SELECT max(w) FROM (SELECT max(wall) AS w FROM events UNION ALL "
              "SELECT max(wall) FROM metrics UNION ALL SELECT max(wall) FROM system_metrics)",
              path_);
  return s.step(path_) ? s.real(0) : 0;
}

sqlite3_stmt* RunStore::prepare_insert(int rows) {
  std::string sql =
      "INSERT INTO metrics (node, rank, attempt, seq, wall, step, key, value) VALUES ";
  for (int i = 0; i < rows; ++i) sql += i ? ",(?,?,?,?,?,?,?,?)" : "(?,?,?,?,?,?,?,?)";
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v3(db_, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr) !=
      SQLITE_OK) {
    throw TrackingError(path_ + ": " + sqlite3_errmsg(db_));
  }
  return stmt;
}

void RunStore::write_points(const MetricPoint* points, int count, sqlite3_stmt* s) {
  for (int i = 0; i < count; ++i) {
    const MetricPoint& p = points[i];
    int c = i * 8;
    sqlite3_bind_int(s, c + 1, p.node);
    sqlite3_bind_int(s, c + 2, p.rank);
    sqlite3_bind_int(s, c + 3, p.attempt);
    sqlite3_bind_int64(s, c + 4, p.seq);
    sqlite3_bind_double(s, c + 5, p.wall);
    if (p.step)
      sqlite3_bind_int64(s, c + 6, *p.step);
    else
      sqlite3_bind_null(s, c + 6);
    sqlite3_bind_text(s, c + 7, p.key.data(), static_cast<int>(p.key.size()), SQLITE_STATIC);
    sqlite3_bind_double(s, c + 8, p.value);
  }
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) throw TrackingError(path_ + ": " + sqlite3_errmsg(db_));
}

void RunStore::add_metric(const PointOrigin& at, std::string_view key, double value) {
  MetricPoint& p = pending_[pending_count_++];
  static_cast<PointOrigin&>(p) = at;
  p.key.assign(key);
  p.value = value;
  if (pending_count_ < kBatch) return;
  pending_count_ = 0;
  if (!insert_batch_) insert_batch_ = prepare_insert(kBatch);
  write_points(pending_.data(), kBatch, insert_batch_);
}

void RunStore::flush_points() {
  int count = pending_count_;
  pending_count_ = 0;
  if (count > 0 && !insert_one_) insert_one_ = prepare_insert(1);
  for (int i = 0; i < count; ++i) write_points(&pending_[i], 1, insert_one_);
}

void RunStore::add_config(int node, int rank, int attempt, const std::string& key,
                          const std::string& value_json) {
  Statement s(db_, "INSERT INTO config VALUES (?,?,?,?,?)", path_);
  s.bind(1, node).bind(2, rank).bind(3, attempt).bind(4, key).bind(5, value_json).step(path_);
}

void RunStore::add_summary(int node, int rank, int attempt, const std::string& key,
                           const std::string& value_json) {
  Statement s(db_, "INSERT INTO summaries VALUES (?,?,?,?,?)", path_);
  s.bind(1, node).bind(2, rank).bind(3, attempt).bind(4, key).bind(5, value_json).step(path_);
}

void RunStore::add_system_metrics(int node, double wall,
                                  const std::vector<std::pair<std::string, double>>& values) {
  Statement s(db_, "INSERT INTO system_metrics (node, wall, key, value) VALUES (?,?,?,?)", path_);
  for (const auto& [k, v] : values) {
    s.bind(1, node).bind(2, wall).bind(3, k).bind(4, v);
    s.step(path_);
    s.reset();
  }
}

std::vector<std::tuple<double, std::string, double>> RunStore::system_metrics() {
  Statement s(db_, "SELECT wall, key, value FROM system_metrics ORDER BY wall", path_);
  std::vector<std::tuple<double, std::string, double>> out;
  while (s.step(path_)) out.emplace_back(s.real(0), s.text(1), s.real(2));
  return out;
}

std::vector<std::tuple<std::string, int64_t, double>> RunStore::system_metric_summaries() {
  Statement s(db_,
              "SELECT key, COUNT(*), (SELECT value FROM system_metrics s2 WHERE s2.key = s.key "
              "ORDER BY wall DESC LIMIT 1) FROM system_metrics s GROUP BY key ORDER BY key",
              path_);
  std::vector<std::tuple<std::string, int64_t, double>> out;
  while (s.step(path_)) out.emplace_back(s.text(0), s.integer(1), s.real(2));
  return out;
}

int64_t RunStore::metric_count() {
  flush_points();
  Statement s(db_, "SELECT COUNT(*) FROM metrics", path_);
  s.step(path_);
  return s.integer(0);
}

std::vector<RunStore::MetricSummary> RunStore::metric_summaries() {
  flush_points();
  Statement s(db_,
              "SELECT rank, key, COUNT(*), MIN(value), MAX(value), "
              "(SELECT value FROM metrics m2 WHERE m2.rank = m.rank AND m2.key = m.key "
              " ORDER BY attempt DESC, seq DESC LIMIT 1) "
              "FROM metrics m GROUP BY rank, key ORDER BY key, rank",
              path_);
  std::vector<MetricSummary> out;
  while (s.step(path_)) {
    out.push_back(
        {static_cast<int>(s.integer(0)), s.text(1), s.integer(2), s.real(5), s.real(3), s.real(4)});
  }
  return out;
}

std::vector<MetricPoint> RunStore::metrics() {
  std::vector<MetricPoint> out;
  for_each_metric([&](const MetricPoint& p) { out.push_back(p); });
  return out;
}

void RunStore::for_each_metric(const std::function<void(const MetricPoint&)>& visit) {
  flush_points();
  Statement s(db_, std::string(kPointColumns) + " ORDER BY node, rank, attempt, seq, key", path_);
  visit_points(s, path_, visit);
}

std::vector<MetricPoint> RunStore::metrics_of(const std::string& key) {
  std::vector<MetricPoint> out;
  for_each_metric_added(key, 0, last_metric_row(), true,
                        [&](const MetricPoint& p) { out.push_back(p); });
  return out;
}

std::vector<std::pair<std::string, int64_t>> RunStore::metric_keys() {
  flush_points();
  Statement s(db_, "SELECT key, COUNT(*) FROM metrics GROUP BY key ORDER BY key", path_);
  std::vector<std::pair<std::string, int64_t>> out;
  while (s.step(path_)) out.emplace_back(s.text(0), s.integer(1));
  return out;
}

int64_t RunStore::last_metric_row() {
  flush_points();
  Statement s(db_, "SELECT COALESCE(MAX(rowid), 0) FROM metrics", path_);
  s.step(path_);
  return s.integer(0);
}

std::vector<std::pair<std::string, int64_t>> RunStore::metric_keys_added(int64_t after,
                                                                         int64_t upto) {
  Statement s(db_, "SELECT key, COUNT(*) FROM metrics WHERE rowid > ? AND rowid <= ? GROUP BY key",
              path_);
  s.bind(1, after).bind(2, upto);
  std::vector<std::pair<std::string, int64_t>> out;
  while (s.step(path_)) out.emplace_back(s.text(0), s.integer(1));
  return out;
}

void RunStore::for_each_metric_added(const std::string& key, int64_t after, int64_t upto,
                                     bool by_series,
                                     const std::function<void(const MetricPoint&)>& visit) {
  std::string sql = std::string(kPointColumns) + " WHERE rowid > ? AND rowid <= ? AND key = ? ";
  sql += by_series ? "ORDER BY rank, attempt, seq" : "ORDER BY rowid";
  Statement s(db_, sql, path_);
  s.bind(1, after).bind(2, upto).bind(3, key);
  visit_points(s, path_, visit);
}

namespace {

std::vector<RunStore::Entry> read_entries(sqlite3* db, const std::string& table,
                                          const std::string& path) {
  Statement s(db, "SELECT node, rank, attempt, key, value FROM " + table + " ORDER BY rowid", path);
  std::vector<RunStore::Entry> out;
  while (s.step(path)) {
    out.push_back({static_cast<int>(s.integer(0)), static_cast<int>(s.integer(1)),
                   static_cast<int>(s.integer(2)), s.text(3), s.text(4)});
  }
  return out;
}

}  // namespace

std::vector<RunStore::Entry> RunStore::configs() { return read_entries(db_, "config", path_); }
std::vector<RunStore::Entry> RunStore::summaries() { return read_entries(db_, "summaries", path_); }

std::vector<std::tuple<int, double, std::string, double>> RunStore::node_system_metrics() {
  Statement s(db_, "SELECT node, wall, key, value FROM system_metrics ORDER BY wall, rowid", path_);
  std::vector<std::tuple<int, double, std::string, double>> out;
  while (s.step(path_)) {
    out.emplace_back(static_cast<int>(s.integer(0)), s.real(1), s.text(2), s.real(3));
  }
  return out;
}

int64_t RunStore::stream_offset(const std::string& stream) {
  Statement s(db_, "SELECT offset FROM streams WHERE path = ?", path_);
  s.bind(1, stream);
  return s.step(path_) ? s.integer(0) : 0;
}

void RunStore::set_stream_offset(const std::string& stream, int64_t offset) {
  Statement s(db_, "INSERT OR REPLACE INTO streams (path, offset) VALUES (?, ?)", path_);
  s.bind(1, stream).bind(2, offset).step(path_);
}

}  // namespace ddprun::tracking
