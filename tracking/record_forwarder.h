#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "net/socket.h"
#include "tracking/record_lines.h"

namespace ddprun::tracking {

/// A non-primary agent's end of record forwarding (see record_link.h): sends the
/// whole lines of every stream in its directory (`streams/*.jsonl` and
/// `agent.jsonl`) that the primary does not hold yet. The files stay on disk: they
/// are the local copy `ddprun runs merge` folds in when the primary is unreachable.
/// pass() and bye() run on one thread; set_endpoint() and hurry() may be called from
/// any.
class RecordForwarder {
 public:
  /// `token`: the job token the primary's receiver asks for ("" = none).
  RecordForwarder(std::string dir, std::string agent_id, std::string token = "");
  ~RecordForwarder();
  RecordForwarder(const RecordForwarder&) = delete;
  RecordForwarder& operator=(const RecordForwarder&) = delete;

  void set_endpoint(const std::string& host, int port);

  /// Sends what is new. With `final` the writers are gone: unterminated last lines
  /// are torn records (counted in the returned stats, never sent). Returns the
  /// stats of what was read; network trouble is logged once and retried next pass.
  IngestStats pass(bool final);

  /// Tells the primary this agent has sent everything; true if it answered.
  bool bye();

  /// A final pass is wanted now: a reply already awaited, and every one until the
  /// next final pass ends, is awaited no longer than a final pass's own (seconds, not
  /// the half minute a pass mid-job allows a busy primary).
  void hurry();

  /// True when the last pass left no complete line the primary does not hold.
  bool all_sent() const { return !unsent_; }

  const std::string& dir() const { return dir_; }
  /// "at HOST:PORT", or says that the primary never published one (for messages).
  std::string endpoint();

 private:
  bool connected();
  int64_t send_chunk(const std::string& stream, int64_t offset, std::string_view data,
                     std::chrono::milliseconds timeout);
  std::string request(const std::string& header, std::string_view data,
                      std::chrono::milliseconds timeout);
  std::chrono::steady_clock::time_point await_reply(std::chrono::steady_clock::time_point deadline);
  void lost(const std::string& why);

  std::string dir_;
  std::string agent_id_;
  std::string token_;
  std::mutex mutex_;  // guards host_, port_
  std::string host_;
  int port_ = 0;
  net::Socket socket_;
  std::map<std::string, int64_t> sent_;  // stream -> offset the primary holds
  std::map<std::string, bool> torn_seen_;
  bool unsent_ = false;  // the last pass left complete lines behind
  bool warned_ = false;
  std::atomic<bool> hurried_{false};
  int hurry_fd_ = -1;  // eventfd, written by hurry()
  std::chrono::steady_clock::time_point retry_after_{};
};

}  // namespace ddprun::tracking
