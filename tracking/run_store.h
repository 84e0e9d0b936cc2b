#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "common/error.h"
#include "tracking/run_schema.h"

namespace ddprun::tracking {

/// A tracking database could not be opened, read or written.
class TrackingError : public Error {
 public:
  using Error::Error;
};

/// Where and when a logged record's points were taken.
struct PointOrigin {
  int node = 0;
  int rank = 0;
  int attempt = 0;
  int64_t seq = 0;
  double wall = 0;
  std::optional<int64_t> step;
};

/// One metric point as a worker logged it.
struct MetricPoint : PointOrigin {
  std::string key;
  double value = 0;
};

/// A lifecycle event the launcher records (rendezvous, worker start/exit, restart...).
struct Event {
  double wall = 0;
  std::string kind;
  int node = -1;
  int rank = -1;
  int attempt = -1;
  std::string data_json = "{}";
};

/// Makes `<run_dir>/run.db` from the built-in image of an empty run unless it already
/// holds one (an empty file, as a crash may leave, is made again): a readable run, not
/// described yet. True when it was made here. Throws TrackingError naming the file.
bool make_empty_run(const std::string& run_dir);

/// The run's SQLite database (`run.db`, WAL mode, schema versioned). One writer: the
/// primary agent; readers (`ddprun runs`) may open it while the job runs.
/// Not thread-safe. Errors: TrackingError naming the file.
class RunStore {
 public:
  static constexpr int kSchemaVersion = kRunSchemaVersion;

  enum class Open {
    kCreate,    // made when missing (from the built-in empty run); the primary agent, the
                // only writer while a job runs
    kNew,       // as kCreate, made just now by make_empty_run (its first commit needs no sync)
    kExisting,  // read and written (merges, recovery)
    kReadOnly,  // never written, readable while the job writes it (`ddprun runs`)
  };
  /// Opens `<run_dir>/run.db`.
  RunStore(const std::string& run_dir, Open mode);
  /// The run directory it was opened in.
  std::string run_dir() const { return path_.substr(0, path_.size() - kFileNameSize); }
  ~RunStore();
  RunStore(const RunStore&) = delete;
  RunStore& operator=(const RunStore&) = delete;

  void set_meta(const std::string& key, const std::string& value);
  std::optional<std::string> meta(const std::string& key);

  void add_event(const Event& e);
  /// Every event, or only those of `kind`, oldest first.
  std::vector<Event> events(const std::string& kind = "");
  /// How many events of one kind; the latest one of a kind, if any.
  int64_t count_events(const std::string& kind);
  std::optional<Event> last_event(const std::string& kind);
  /// The wall time of the run's last record of any kind (event, metric point, system
  /// sample); 0 when it has none. Reads every table: for runs that never said their end.
  double last_record_wall();

  /// Stores one point. Points are written in batches of kBatch rows (one statement
  /// each); call inside begin/commit, which writes what is still pending.
  void add_metric(const PointOrigin& at, std::string_view key, double value);
  void add_config(int node, int rank, int attempt, const std::string& key,
                  const std::string& value_json);
  void add_summary(int node, int rank, int attempt, const std::string& key,
                   const std::string& value_json);
  int64_t metric_count();

  /// System metric samples of one node at one moment.
  void add_system_metrics(int node, double wall,
                          const std::vector<std::pair<std::string, double>>& values);
  /// All samples: wall, key, value, in time order.
  std::vector<std::tuple<double, std::string, double>> system_metrics();
  /// Per key: samples, last value.
  std::vector<std::tuple<std::string, int64_t, double>> system_metric_summaries();

  /// Per-key statistics of the metrics of one rank: key, count, last value, min, max.
  struct MetricSummary {
    int rank;
    std::string key;
    int64_t count;
    double last;
    double min;
    double max;
  };
  std::vector<MetricSummary> metric_summaries();

  /// All points, ordered by (node, rank, attempt, seq).
  std::vector<MetricPoint> metrics();
  /// The same, one at a time: a run of any size in constant memory.
  void for_each_metric(const std::function<void(const MetricPoint&)>& visit);
  /// The points of one key, ordered by (rank, attempt, seq).
  std::vector<MetricPoint> metrics_of(const std::string& key);
  /// Every metric key with its number of points, by key.
  std::vector<std::pair<std::string, int64_t>> metric_keys();

  /// Points are only ever added, each with a larger row id than the last: readers
  /// catch up with what was added since they last looked (`after`, up to `upto`).
  int64_t last_metric_row();
  std::vector<std::pair<std::string, int64_t>> metric_keys_added(int64_t after, int64_t upto);
  /// Points of `key` with row ids in (after, upto]: ordered by (rank, attempt, seq)
  /// when `by_series`, else in the order they were stored.
  void for_each_metric_added(const std::string& key, int64_t after, int64_t upto, bool by_series,
                             const std::function<void(const MetricPoint&)>& visit);

  /// A config or summary entry a worker logged (`value_json` as logged).
  struct Entry {
    int node;
    int rank;
    int attempt;
    std::string key;
    std::string value_json;
  };
  std::vector<Entry> configs();
  std::vector<Entry> summaries();
  /// All system samples with their node: node, wall, key, value, in time order.
  std::vector<std::tuple<int, double, std::string, double>> node_system_metrics();

  /// Where ingestion of a stream file stopped (bytes), so it resumes there.
  int64_t stream_offset(const std::string& stream);
  void set_stream_offset(const std::string& stream, int64_t offset);

  void begin();
  void commit();
  /// Undoes the open transaction, if any; never throws.
  void rollback() noexcept;

 private:
  static constexpr int kBatch = 64;

  void configure(Open mode, bool made);
  void exec(const std::string& sql);
  sqlite3_stmt* prepare_insert(int rows);
  void write_points(const MetricPoint* points, int count, sqlite3_stmt* stmt);
  void flush_points();

  sqlite3_stmt* prepared(sqlite3_stmt*& stmt, const char* sql);

  sqlite3* db_ = nullptr;
  sqlite3_stmt* insert_one_ = nullptr;
  sqlite3_stmt* insert_batch_ = nullptr;
  // What the launcher writes most, compiled once.
  sqlite3_stmt* set_meta_ = nullptr;
  sqlite3_stmt* add_event_ = nullptr;
  bool sync_after_commit_ = false;  // a new run's first commit is not synced
  // Points not written yet; their keys keep their capacity between batches.
  std::vector<MetricPoint> pending_ = std::vector<MetricPoint>(kBatch);
  int pending_count_ = 0;
  static constexpr size_t kFileNameSize = sizeof("/run.db") - 1;
  std::string path_;
};

}  // namespace ddprun::tracking
