#include "dashboard/run_cache.h"

#include <algorithm>

namespace ddprun::dashboard {

RunCache::Run& RunCache::run(const std::string& run_dir, tracking::RunStore& store,
                             int64_t& last_row) {
  last_row = store.last_metric_row();
  std::string created = store.meta("created").value_or("");
  auto it = std::find_if(runs_.begin(), runs_.end(), [&](const Run& r) { return r.dir == run_dir; });
  if (it != runs_.end() && (it->counted > last_row || it->created != created)) {
    runs_.erase(it);  // the run was made again: nothing read of the old one holds
    it = runs_.end();
  }
  if (it == runs_.end()) {
    runs_.push_front(Run{run_dir, created, 0, {}, {}});
    if (runs_.size() > kRuns) runs_.pop_back();
  } else {
    runs_.splice(runs_.begin(), runs_, it);
  }
  return runs_.front();
}

std::map<std::string, int64_t> RunCache::metric_counts(const std::string& run_dir,
                                                       tracking::RunStore& store) {
  std::lock_guard lock(mutex_);
  int64_t last_row = 0;
  Run& r = run(run_dir, store, last_row);
  if (last_row > r.counted) {
    for (const auto& [key, n] : store.metric_keys_added(r.counted, last_row)) r.counts[key] += n;
    r.counted = last_row;
  }
  return r.counts;
}

void RunCache::with_series(const std::string& run_dir, tracking::RunStore& store,
                           const std::string& key, const std::function<void(const Lines&)>& use) {
  std::lock_guard lock(mutex_);
  int64_t last_row = 0;
  Run& r = run(run_dir, store, last_row);
  KeyLines& k = r.keys[key];
  // The first read takes the lines whole and in order; later ones append what was
  // stored since (a stream is stored in its order). A point older than its line's last
  // (a part merged late) has the key read afresh.
  for (bool again = true; again && last_row > k.upto;) {
    again = false;
    bool whole = k.upto == 0;
    store.for_each_metric_added(key, k.upto, last_row, whole, [&](const tracking::MetricPoint& p) {
      Series& s = k.lines[{p.rank, p.attempt}];
      if (s.last_seq < 0) {
        s.rank = p.rank;
        s.node = p.node;
        s.attempt = p.attempt;
      }
      if (p.seq < s.last_seq && !whole) again = true;
      s.last_seq = std::max(s.last_seq, p.seq);
      double x = p.step ? static_cast<double>(*p.step) : static_cast<double>(p.seq);
      s.points.push_back({x, p.value, p.wall});
    });
    if (again) {
      k = KeyLines{};
    } else {
      k.upto = last_row;
    }
  }
  use(k.lines);
  if (k.lines.empty()) r.keys.erase(key);  // no such key: nothing kept for it
}

}  // namespace ddprun::dashboard
