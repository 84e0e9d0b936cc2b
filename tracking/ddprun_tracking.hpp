#pragma once

// ddprun's tracking client for C++ training programs: header-only, no dependencies.
//
//   #include "tracking/ddprun_tracking.hpp"
//   ddprun::track::config({{"lr", "0.1"}});
//   ddprun::track::log({{"loss", 0.25}}, /*step=*/10);
//   ddprun::track::summary({{"best_acc", "0.91"}});
//   ddprun::track::heartbeat();                          // "still going"
//   { ddprun::track::Section s("checkpoint", std::chrono::minutes(10)); save(); }
//   { ddprun::track::Waiting w; allreduce(); }           // waiting for the other ranks
//   ddprun::track::step();                               // one training step done
//   ddprun::track::checkpoint(10);                       // the state after step 10 is saved
//
// Records go to this process's stream (DDPRUN_TRACKING_STREAM, set by ddprun) as JSON
// lines, buffered and written in whole lines by a background thread every
// DDPRUN_TRACKING_FLUSH seconds (default 1), when the buffer grows, on flush() and at
// exit. Outside ddprun every call does nothing. Calls never block on disk I/O and never
// throw; thread-safe. Every call is also progress that ddprun watches (hang detection,
// metrics, straggler detection), written to a shared page (DDPRUN_PROGRESS_FILE) with
// no system call.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

namespace ddprun::track {
namespace detail {

inline bool needs_escape(char c) {
  return c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20;
}

inline void append_json_string(std::string& out, const std::string& s) {
  out += '"';
  size_t plain = 0;
  while (plain < s.size() && !needs_escape(s[plain])) ++plain;
  out.append(s, 0, plain);  // most keys: copied whole
  for (char c : std::string_view(s).substr(plain)) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

inline void append_number(std::string& out, double v) {
  if (v != v || v == 1.0 / 0.0 || v == -1.0 / 0.0) {  // JSON has no NaN/Inf
    out += "null";
    return;
  }
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);  // shortest exact form
  out.append(buf, ec == std::errc() ? end : buf);
}

inline void append_integer(std::string& out, int64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, ec == std::errc() ? end : buf);
}

/// The process-wide stream; created on first use.
class Stream {
 public:
  static Stream& get() {
    static Stream stream;
    return stream;
  }

  bool active() const { return fd_ >= 0; }

  void add(const std::string& line) {
    append([&](std::string& out, int64_t) { out += line; });
  }

  /// Lets `write(buffer, seq)` append one record to the pending buffer in place, with
  /// the next sequence number: records reach the file in the order of their seq.
  template <typename Write>
  void append(Write&& write) {
    std::unique_lock lock(mutex_);
    write(pending_, ++seq_);
    if (pending_.size() > kFlushBytes) wake_.notify_one();
  }

  /// Writes what is pending. One writer at a time, so batches reach the file in
  /// order; the two buffers swap and keep their capacity.
  void flush() {
    std::lock_guard writing(write_mutex_);
    {
      std::lock_guard lock(mutex_);
      spare_.swap(pending_);
    }
    write_all(spare_);
    spare_.clear();
  }

  ~Stream() {
    if (fd_ < 0) return;
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_one();
    if (flusher_.joinable()) flusher_.join();
    flush();
    ::close(fd_);
  }

 private:
  static constexpr size_t kFlushBytes = 1 << 20;

  Stream() {
    const char* path = std::getenv("DDPRUN_TRACKING_STREAM");
    if (path == nullptr) return;
    fd_ = ::open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return;  // tracking must never break training
    const char* interval = std::getenv("DDPRUN_TRACKING_FLUSH");
    double seconds = interval ? std::atof(interval) : 1.0;
    interval_ =
        std::chrono::milliseconds(static_cast<int64_t>((seconds > 0 ? seconds : 1.0) * 1000));
    flusher_ = std::thread([this] { flush_loop(); });
  }

  void flush_loop() {
    std::unique_lock lock(mutex_);
    while (!stop_) {
      wake_.wait_for(lock, interval_, [this] { return stop_ || pending_.size() > kFlushBytes; });
      lock.unlock();
      flush();
      lock.lock();
    }
  }

  // One write per batch: records never tear apart between processes.
  void write_all(const std::string& data) {
    size_t off = 0;
    while (off < data.size()) {
      ssize_t n = ::write(fd_, data.data() + off, data.size() - off);
      if (n <= 0) return;
      off += static_cast<size_t>(n);
    }
  }

  int fd_ = -1;
  std::mutex mutex_;  // guards pending_, seq_, stop_
  std::mutex write_mutex_;
  std::condition_variable wake_;
  std::string pending_;
  std::string spare_;
  bool stop_ = false;
  int64_t seq_ = 0;
  std::chrono::milliseconds interval_{1000};
  std::thread flusher_;
};

/// Wall time as seconds with microseconds ("1700000000.123456"), in integers only.
inline void append_wall_time(std::string& out) {
  int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
  append_integer(out, us / 1'000'000);
  char frac[6];
  int64_t rest = us % 1'000'000;
  for (int i = 5; i >= 0; --i, rest /= 10) frac[i] = static_cast<char>('0' + rest % 10);
  out += '.';
  out.append(frac, 6);
}

// The progress page ddprun reads (layout in ddprun's agent/hang/progress_page.h): beats at
// 8, the last step at 16, the section's timeout in ms at 24 and its name at 32; steps
// timed at 96, their total ns at 104, of it own work at 112, who marks steps at 120; on
// a page of 256 bytes (an older ddprun's has 128), the first and last step's end at 128
// and 136, the last checkpoint at 144 (wall clock, us) and its step at 152.
class ProgressPage {
 public:
  static ProgressPage& get() {
    static ProgressPage page;
    return page;
  }
  void beat(std::optional<int64_t> step = std::nullopt) {
    if (base_ == nullptr) return;
    // GCC/Clang atomics on the shared page (std::atomic_ref would need C++20).
    if (step) __atomic_store_n(reinterpret_cast<int64_t*>(base_ + 16), *step, __ATOMIC_RELAXED);
    __atomic_fetch_add(reinterpret_cast<uint64_t*>(base_ + 8), 1, __ATOMIC_RELAXED);
  }
  void show_section(const std::string& name, uint64_t timeout_ms) {
    if (base_ == nullptr) return;
    char field[64] = {};
    std::memcpy(field, name.data(), name.size() < 63 ? name.size() : 63);
    std::memcpy(base_ + 32, field, sizeof(field));
    __atomic_store_n(reinterpret_cast<uint64_t*>(base_ + 24), timeout_ms, __ATOMIC_RELAXED);
  }
  /// A step ended now (wall clock, us); `first`: the first of this process.
  void mark_step(int64_t now_us, bool first) {
    if (base_ == nullptr || size_ < 160) return;
    if (first) __atomic_store_n(reinterpret_cast<int64_t*>(base_ + 128), now_us, __ATOMIC_RELAXED);
    __atomic_store_n(reinterpret_cast<int64_t*>(base_ + 136), now_us, __ATOMIC_RELAXED);
  }
  /// The program's state after `step` is durable as of `now_us`.
  void mark_checkpoint(int64_t now_us, std::optional<int64_t> step) {
    if (base_ == nullptr || size_ < 160) return;
    int64_t at = step ? *step : INT64_MIN;
    __atomic_store_n(reinterpret_cast<int64_t*>(base_ + 152), at, __ATOMIC_RELAXED);
    __atomic_store_n(reinterpret_cast<int64_t*>(base_ + 144), now_us, __ATOMIC_RELAXED);
  }
  /// One more step, of `took_ns` in all and `own_ns` of the rank's own work.
  void count_step(uint64_t took_ns, uint64_t own_ns) {
    if (base_ == nullptr) return;
    base_[120] = 2;  // the program marks its steps
    __atomic_fetch_add(reinterpret_cast<uint64_t*>(base_ + 104), took_ns, __ATOMIC_RELAXED);
    __atomic_fetch_add(reinterpret_cast<uint64_t*>(base_ + 112), own_ns, __ATOMIC_RELAXED);
    __atomic_fetch_add(reinterpret_cast<uint64_t*>(base_ + 96), 1, __ATOMIC_RELAXED);
  }

 private:
  ProgressPage() {
    const char* path = std::getenv("DDPRUN_PROGRESS_FILE");
    if (path == nullptr || *path == '\0') return;
    int fd = ::open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st {};
    size_t size = ::fstat(fd, &st) == 0 && st.st_size >= 256 ? 256 : 128;
    void* map = st.st_size >= 128 ? ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                                  : MAP_FAILED;
    ::close(fd);
    if (map == MAP_FAILED) return;
    if (std::memcmp(map, "DDPRPG01", 8) != 0) {
      ::munmap(map, size);
      return;
    }
    base_ = static_cast<char*>(map);
    size_ = size;
  }
  char* base_ = nullptr;  // mapped for the process's life
  size_t size_ = 0;
};

}  // namespace detail

/// Tells ddprun this rank is making progress, for code that logs rarely: no record,
/// no system call.
inline void heartbeat() { detail::ProgressPage::get().beat(); }

namespace detail {
inline int64_t wall_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The training loop's step clock (one per thread: the loop's).
struct StepClock {
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> last_end;
  Clock::duration waited{0};
  static StepClock& get() {
    thread_local StepClock clock;
    return clock;
  }
};
}  // namespace detail

/// Time spent waiting for the other ranks (a collective, a barrier) while it lives: not
/// counted as this rank's own work in its steps.
class Waiting {
 public:
  Waiting() : start_(detail::StepClock::Clock::now()) {}
  ~Waiting() { detail::StepClock::get().waited += detail::StepClock::Clock::now() - start_; }
  Waiting(const Waiting&) = delete;
  Waiting& operator=(const Waiting&) = delete;

 private:
  detail::StepClock::Clock::time_point start_;
};

/// Marks the end of one training step (on the training loop's thread): ddprun compares
/// how long each rank works per step, outside Waiting scopes, to name a rank that slows
/// the others. `step`, if given, is the step's number, as in log().
inline void step(std::optional<int64_t> number = std::nullopt) {
  auto& page = detail::ProgressPage::get();
  page.beat(number);
  auto& clock = detail::StepClock::get();
  auto now = detail::StepClock::Clock::now();
  page.mark_step(detail::wall_us(), !clock.last_end);
  if (clock.last_end) {
    auto took = now - *clock.last_end;
    auto own = took > clock.waited ? took - clock.waited : detail::StepClock::Clock::duration{0};
    page.count_step(static_cast<uint64_t>(std::chrono::nanoseconds(took).count()),
                    static_cast<uint64_t>(std::chrono::nanoseconds(own).count()));
  }
  clock.last_end = now;
  clock.waited = {};
}

/// Says that the program's state after step `step` is durable now (call it once the
/// checkpoint is written): a restart resumes from here, so ddprun counts the work after
/// it, not before, as lost when a failure follows (goodput accounting).
inline void checkpoint(std::optional<int64_t> step = std::nullopt) {
  auto& page = detail::ProgressPage::get();
  page.beat(step);
  page.mark_checkpoint(detail::wall_us(), step);
}

/// A known-long phase (checkpointing, evaluation) with its own hang timeout (none:
/// never counted as hung inside). Sections nest on one thread.
class Section {
 public:
  explicit Section(std::string name,
                   std::optional<std::chrono::milliseconds> timeout = std::nullopt)
      : outer_(current()) {
    uint64_t ms =
        timeout ? static_cast<uint64_t>(timeout->count() > 0 ? timeout->count() : 1) : ~uint64_t{0};
    current() = {std::move(name), ms};
    detail::ProgressPage::get().show_section(current().first, ms);
    heartbeat();
  }
  ~Section() {
    current() = outer_;
    detail::ProgressPage::get().show_section(outer_.first, outer_.second);
    heartbeat();
  }
  Section(const Section&) = delete;
  Section& operator=(const Section&) = delete;

 private:
  using Shown = std::pair<std::string, uint64_t>;  // name, timeout in ms (0: none)
  static Shown& current() {
    thread_local Shown shown{"", 0};
    return shown;
  }
  Shown outer_;
};

/// True under ddprun with tracking on.
inline bool active() { return detail::Stream::get().active(); }

/// Records metric values, optionally at a training step (any step, in any order).
inline void log(std::initializer_list<std::pair<std::string, double>> values,
                std::optional<int64_t> step = std::nullopt) {
  detail::ProgressPage::get().beat(step);
  auto& s = detail::Stream::get();
  if (!s.active()) return;
  s.append([&](std::string& line, int64_t seq) {
    line += "{\"k\":\"log\",\"seq\":";
    detail::append_integer(line, seq);
    line += ",\"t\":";
    detail::append_wall_time(line);
    if (step) {
      line += ",\"step\":";
      detail::append_integer(line, *step);
    }
    line += ",\"d\":{";
    bool first = true;
    for (const auto& [k, v] : values) {
      if (!first) line += ',';
      first = false;
      detail::append_json_string(line, k);
      line += ':';
      detail::append_number(line, v);
    }
    line += "}}\n";
  });
}

namespace detail {
inline void record(const char* kind,
                   std::initializer_list<std::pair<std::string, std::string>> kv) {
  ProgressPage::get().beat();
  auto& s = Stream::get();
  if (!s.active()) return;
  std::string line = std::string("{\"k\":\"") + kind + "\",\"d\":{";
  bool first = true;
  for (const auto& [k, v] : kv) {
    if (!first) line += ',';
    first = false;
    append_json_string(line, k);
    line += ':';
    append_json_string(line, v);
  }
  line += "}}\n";
  s.add(std::move(line));
}
}  // namespace detail

/// Records configuration values (as strings).
inline void config(std::initializer_list<std::pair<std::string, std::string>> values) {
  detail::record("config", values);
}

/// Records summary values (as strings).
inline void summary(std::initializer_list<std::pair<std::string, std::string>> values) {
  detail::record("summary", values);
}

/// Writes buffered records now.
inline void flush() {
  if (active()) detail::Stream::get().flush();
}

}  // namespace ddprun::track
