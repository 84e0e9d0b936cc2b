#pragma once

#include <chrono>
#include <string>

#include "net/socket.h"
#include "store/store.h"
#include "store/tcpstore/tcp_store_protocol.h"

namespace ddprun::store {

/// A Store backed by a TCPStore server (ddprun's or PyTorch's) over one connection.
/// Speaks the 2.x numbering by default; kV113 talks to torch 1.13's own server (no
/// APPEND there, and a timed-out wait reconnects since 1.13 cannot cancel one).
/// Keys are sent as given (PyTorch's Python client adds a leading '/').
///
/// Thread-safety: one call at a time (it owns a single connection). Errors:
/// StoreError (naming the address) for a lost connection or a server that closed it,
/// TimeoutError when a call or wait exceeds its timeout.
class TcpStoreClient : public Store {
 public:
  struct Options {
    /// Bound on each call, and on connecting (with retries and backoff).
    std::chrono::milliseconds timeout = kDefaultTimeout;
    tcpstore::Numbering numbering = tcpstore::Numbering::kV2;
    /// The job token the server asks for ("" = none): proved on every connection.
    std::string token = {};
  };

  TcpStoreClient(std::string host, int port, Options options);
  /// On `connected`, a connection to host:port made already (connect_on_loop()), its
  /// handshake still to do: handshake_step() until it returns -1, before any call.
  TcpStoreClient(std::string host, int port, Options options, net::Socket connected);

  /// The handshake (job token, validation) in steps, for an event loop: each sends what
  /// it must and returns the descriptor to wait on until readable before the next step
  /// (the store answers at once), or -1 once the store has answered everything. Throws
  /// as a call does.
  int handshake_step();
  TcpStoreClient(std::string host, int port) : TcpStoreClient(std::move(host), port, Options{}) {}

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, std::chrono::milliseconds timeout) override;
  int64_t add(const std::string& key, int64_t delta) override;
  std::string compare_set(const std::string& key, const std::string& expected,
                          const std::string& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;
  std::vector<std::string> multi_get(const std::vector<std::string>& keys,
                                     std::chrono::milliseconds timeout) override;
  void multi_set(const std::vector<std::string>& keys,
                 const std::vector<std::string>& values) override;
  void append(const std::string& key, const std::string& value) override;
  void interrupt() override { socket_.shutdown(); }

  /// The current values of `keys` without waiting; "" for a missing key (2.x only).
  std::vector<std::string> multi_get_now(const std::vector<std::string>& keys);
  /// One round trip (2.x); an empty value reads as missing.
  using Store::get_now;
  std::vector<std::optional<std::string>> get_now(const std::vector<std::string>& keys) override;

  /// wait() in halves, for many clients waiting at once on one thread (a barrier's
  /// benchmark): sends WAIT for `keys` and returns the connection's descriptor, which
  /// turns readable when the store answers; then finish_wait() reads the answer.
  /// No other call may come in between. (A loop waits with wait_on_loop().)
  int start_wait(const std::vector<std::string>& keys);
  /// Reads the answer to start_wait(); StoreError unless the keys are all there.
  void finish_wait();
  /// Withdraws a WAIT not answered in time, wait()'s or start_wait()'s (2.x; 1.13
  /// cannot, and drops the connection). True when the keys arrived meanwhile after all.
  bool cancel_wait();

  /// The open connection, for a request awaited on an event loop
  /// (store/tcpstore/store_on_loop.h, after reconnect_on_loop()): the request is sent
  /// and its answer read there as the socket turns ready. No other call may come in
  /// between; drop() after a request half sent or an answer left unread.
  net::Socket& connection() { return socket_; }
  void drop() { socket_.close(); }
  /// Whether a connection is open (a dropped one is made again by the next call, or on
  /// a loop by reconnect_on_loop(), store_connect.h).
  bool connected() const { return socket_.is_open(); }
  /// Takes `connected`, a new connection to host:port, its handshake still to do
  /// (handshake_step() until it returns -1).
  void use(net::Socket connected);
  const std::string& host() const { return host_; }
  int port() const { return port_; }
  std::chrono::milliseconds timeout() const { return options_.timeout; }
  tcpstore::Numbering numbering() const { return options_.numbering; }

  /// Round trip with a nonce (2.x only); returns the nonce echoed.
  uint32_t ping(uint32_t nonce);

  const std::string& address() const { return address_; }
  /// Changes the bound on each later call.
  void set_timeout(std::chrono::milliseconds timeout) { options_.timeout = timeout; }

 private:
  enum class HandshakeStage { kNothingSent, kHelloSent, kProofSent, kPingSent, kDone };
  void connect();
  void handshake();
  int validate();
  net::Socket& socket();
  net::Socket::Deadline deadline() const { return Clock::now() + options_.timeout; }
  template <typename T>
  T read_scalar(net::Socket::Deadline deadline);
  std::string read_bytes(net::Socket::Deadline deadline);
  void send(const std::string& bytes);
  void expect_stop_waiting(uint8_t reply);

  std::string host_;
  int port_;
  Options options_;
  std::string address_;
  net::Socket socket_;
  HandshakeStage handshake_stage_ = HandshakeStage::kNothingSent;
};

}  // namespace ddprun::store
