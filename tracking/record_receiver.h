#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace ddprun::tracking {

/// The primary agent's end of record forwarding (see record_link.h): accepts the
/// other agents' connections on a free port and stores what they send into the run
/// (its own database connection, on its own thread). A bad frame closes only that
/// connection. Thread-safe.
class RecordReceiver {
 public:
  /// Binds on a free port of `host` ("" dual-stack on every interface) and starts
  /// serving. Throws StoreError. With a `token`, only agents that prove it may send
  /// (net/token_gate.h).
  explicit RecordReceiver(const std::string& run_dir, std::string token = "",
                          const std::string& host = "");
  ~RecordReceiver();
  RecordReceiver(const RecordReceiver&) = delete;
  RecordReceiver& operator=(const RecordReceiver&) = delete;

  uint16_t port() const;

  /// Waits until every connected agent said bye or hung up, at most `max`.
  void wait_for_agents(std::chrono::milliseconds max);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ddprun::tracking
