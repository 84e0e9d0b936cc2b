#include "agent/hang/timer_watchdog.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "common/error.h"

namespace ddprun::agent {
namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;

// A request line is about 100 bytes; anything past this is not one.
constexpr size_t kMaxLine = 64 * 1024;

double system_wall() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int open_fifo(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    throw SystemError("cannot open the worker watchdog's FIFO " + path, errno);
  }
  return fd;
}

}  // namespace

TimerWatchdog::TimerWatchdog(asio::io_context& io, Clock& clock, std::string path, WallClock wall)
    : clock_(clock),
      path_(std::move(path)),
      wall_(wall ? std::move(wall) : WallClock(system_wall)),
      fifo_(io),
      timer_(clock.make_timer()) {
  ::unlink(path_.c_str());
  if (::mkfifo(path_.c_str(), 0600) != 0) {
    throw SystemError("cannot make the worker watchdog's FIFO " + path_, errno);
  }
  int read_end = open_fifo(path_, O_RDONLY);
  fifo_.assign(read_end);
  write_end_ = open_fifo(path_, O_WRONLY);
  read();
}

TimerWatchdog::~TimerWatchdog() {
  boost::system::error_code ignored;
  fifo_.close(ignored);
  if (write_end_ >= 0) ::close(write_end_);
  ::unlink(path_.c_str());
}

void TimerWatchdog::start(FindOwner owner, std::function<void(const Expiry&)> expired) {
  owner_ = std::move(owner);
  expired_ = std::move(expired);
  watching_ = true;
}

void TimerWatchdog::stop() {
  watching_ = false;
  timers_.clear();
  timer_->cancel();
}

void TimerWatchdog::read() {
  fifo_.async_read_some(asio::buffer(buffer_), [this](boost::system::error_code ec, size_t n) {
    if (ec == asio::error::operation_aborted) return;  // closed: `this` may be gone
    if (ec) {
      spdlog::warn("worker watchdog: cannot read {}: {}", path_, ec.message());
      return;
    }
    pending_.append(buffer_, n);
    for (size_t end; (end = pending_.find('\n')) != std::string::npos;) {
      std::string line = pending_.substr(0, end);
      pending_.erase(0, end + 1);
      on_line(line);
    }
    if (pending_.size() > kMaxLine) {
      warn_once("worker watchdog: a request over 64 KiB without a line end was dropped",
                "long line");
      pending_.clear();
    }
    read();
  });
}

void TimerWatchdog::on_line(const std::string& line) {
  if (!watching_ || line.empty()) return;
  auto j = nlohmann::json::parse(line, nullptr, false);
  bool valid = j.is_object() && j.contains("pid") && j["pid"].is_number_integer() &&
               j.contains("scope_id") && j["scope_id"].is_string() &&
               j.contains("expiration_time") && j["expiration_time"].is_number() &&
               (!j.contains("signal") || j["signal"].is_number_integer());
  if (!valid) {
    std::string shown = line.substr(0, 200);
    warn_once("worker watchdog: skipping a request that is not torchrun's timer request: " +
                  shown,
              "malformed");
    return;
  }
  auto pid = j["pid"].get<int64_t>();
  std::string scope = j["scope_id"].get<std::string>();
  double expiration = j["expiration_time"].get<double>();
  int64_t sig = j.value("signal", int64_t{0});
  if (pid <= 0 || pid > INT32_MAX || sig < 0 || sig >= NSIG || !std::isfinite(expiration)) {
    warn_once("worker watchdog: skipping a request with an impossible pid, signal or time: " +
                  line.substr(0, 200),
              "impossible");
    return;
  }
  auto p = static_cast<pid_t>(pid);
  std::optional<int> local_rank = owner_ ? owner_(p) : std::nullopt;
  if (!local_rank) {
    warn_once("worker watchdog: ignoring timer requests from pid " + std::to_string(p) +
                  ", which is not a process of this node's workers",
              "pid " + std::to_string(p));
    return;
  }
  auto key = std::make_pair(p, scope);
  if (expiration < 0) {  // released
    timers_.erase(key);
    return arm();
  }
  double left = std::max(0.0, expiration - wall_());
  auto deadline = clock_.now() + milliseconds(static_cast<int64_t>(std::ceil(left * 1000)));
  timers_[key] = Request{*local_rank, static_cast<int>(sig), expiration, left, deadline};
  arm();
}

void TimerWatchdog::arm() {
  if (timers_.empty()) return timer_->cancel();
  milliseconds first = timers_.begin()->second.deadline;
  for (const auto& [key, r] : timers_) first = std::min(first, r.deadline);
  timer_->start(std::max(milliseconds(0), first - clock_.now()), [this] { fire(); });
}

void TimerWatchdog::fire() {
  milliseconds now = clock_.now();
  // Per pid, its expired scopes in expiry order: the first with a signal is used.
  std::map<pid_t, std::vector<std::pair<const std::string*, const Request*>>> due;
  for (const auto& [key, r] : timers_) {
    if (r.deadline <= now) due[key.first].emplace_back(&key.second, &r);
  }
  std::vector<Expiry> fired;
  std::vector<pid_t> done;
  for (auto& [pid, scopes] : due) {
    std::sort(scopes.begin(), scopes.end(),
              [](const auto& a, const auto& b) { return a.second->expiration < b.second->expiration; });
    const auto* chosen = &scopes.front();
    for (const auto& s : scopes) {
      if (s.second->signal > 0) {
        chosen = &s;
        break;
      }
    }
    const Request& r = *chosen->second;
    if (r.signal == 0) {
      spdlog::warn("worker watchdog: timer '{}' of pid {} (local_rank {}) expired without a "
                   "signal to send; dropped",
                   *chosen->first, pid, r.local_rank);
      for (const auto& s : scopes) timers_.erase({pid, *s.first});
      continue;
    }
    fired.push_back(
        {pid, r.local_rank, *chosen->first, r.signal, r.length, wall_() - r.expiration});
    done.push_back(pid);
  }
  for (pid_t pid : done) {
    for (auto it = timers_.begin(); it != timers_.end();) {
      it = it->first.first == pid ? timers_.erase(it) : std::next(it);
    }
  }
  arm();
  for (const Expiry& e : fired) {
    if (expired_) expired_(e);
  }
}

void TimerWatchdog::warn_once(const std::string& what, const std::string& key) {
  if (warned_.insert(key).second) spdlog::warn("{}", what);
}

}  // namespace ddprun::agent
