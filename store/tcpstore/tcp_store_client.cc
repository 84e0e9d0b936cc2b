#include "store/tcpstore/tcp_store_client.h"

#include <unistd.h>

#include "net/job_token.h"
#include "store/tcpstore/tcp_store_request.h"

namespace ddprun::store {

using namespace tcpstore;

TcpStoreClient::TcpStoreClient(std::string host, int port, Options options)
    : host_(std::move(host)), port_(port), options_(std::move(options)) {
  address_ = (host_.find(':') != std::string::npos ? "[" + host_ + "]" : host_) + ":" +
             std::to_string(port_);
  connect();
}

TcpStoreClient::TcpStoreClient(std::string host, int port, Options options, net::Socket connected)
    : host_(std::move(host)), port_(port), options_(std::move(options)) {
  address_ = (host_.find(':') != std::string::npos ? "[" + host_ + "]" : host_) + ":" +
             std::to_string(port_);
  socket_ = std::move(connected);
}

void TcpStoreClient::use(net::Socket connected) {
  socket_ = std::move(connected);
  handshake_stage_ = HandshakeStage::kNothingSent;
}

void TcpStoreClient::connect() {
  socket_ = net::Socket::connect(host_, port_, deadline());
  handshake_stage_ = HandshakeStage::kNothingSent;
  handshake();
}

void TcpStoreClient::handshake() {
  while (handshake_step() >= 0) {
  }
}

// The job token's challenge (the server answers the hello at once), then the
// validation of a 2.x store and a ping, whose echo proves it answers.
int TcpStoreClient::handshake_step() {
  switch (handshake_stage_) {
    case HandshakeStage::kNothingSent:
      if (!options_.token.empty()) {
        net::job_token::send_hello(socket_, deadline());
        handshake_stage_ = HandshakeStage::kHelloSent;
        return socket_.fd();
      }
      return validate();
    case HandshakeStage::kHelloSent:
      net::job_token::send_proof(socket_, options_.token, "the store at " + address_, deadline());
      handshake_stage_ = HandshakeStage::kProofSent;
      return socket_.fd();
    case HandshakeStage::kProofSent:
      net::job_token::read_verdict(socket_, "the store at " + address_, deadline());
      return validate();
    case HandshakeStage::kPingSent:
      if (read_scalar<uint32_t>(deadline()) != static_cast<uint32_t>(::getpid())) {
        throw StoreError("the store at " + address_ + " answered PING wrongly");
      }
      handshake_stage_ = HandshakeStage::kDone;
      return -1;
    case HandshakeStage::kDone:
      break;
  }
  return -1;
}

int TcpStoreClient::validate() {
  if (options_.numbering != Numbering::kV2) {
    handshake_stage_ = HandshakeStage::kDone;
    return -1;
  }
  send(RequestWriter(Numbering::kV2, Op::kValidate).put(kValidationMagic).bytes());
  send(RequestWriter(Numbering::kV2, Op::kPing).put(static_cast<uint32_t>(::getpid())).bytes());
  handshake_stage_ = HandshakeStage::kPingSent;
  return socket_.fd();
}

net::Socket& TcpStoreClient::socket() {
  if (!socket_.is_open()) connect();
  return socket_;
}

void TcpStoreClient::send(const std::string& bytes) {
  try {
    socket().send_all(bytes.data(), bytes.size(), deadline());
  } catch (const TimeoutError&) {
    socket_.close();  // a half-sent request leaves the stream unusable
    throw;
  }
}

template <typename T>
T TcpStoreClient::read_scalar(net::Socket::Deadline deadline) {
  T v{};
  try {
    socket_.recv_exact(&v, sizeof(v), deadline);
  } catch (const TimeoutError&) {
    socket_.close();
    throw;
  }
  return v;
}

std::string TcpStoreClient::read_bytes(net::Socket::Deadline deadline) {
  auto len = read_scalar<uint64_t>(deadline);
  if (len > kMaxValueSize) {
    socket_.close();
    throw StoreError("the store at " + address_ + " sent a value of " + std::to_string(len) +
                     " bytes");
  }
  std::string out(len, '\0');
  try {
    socket_.recv_exact(out.data(), len, deadline);
  } catch (const TimeoutError&) {
    socket_.close();
    throw;
  }
  return out;
}

uint32_t TcpStoreClient::ping(uint32_t nonce) {
  send(RequestWriter(options_.numbering, Op::kPing).put(nonce).bytes());
  return read_scalar<uint32_t>(deadline());
}

void TcpStoreClient::set(const std::string& key, const std::string& value) {
  send(RequestWriter(options_.numbering, Op::kSet).str(key).str(value).bytes());
}

std::string TcpStoreClient::get(const std::string& key, std::chrono::milliseconds timeout) {
  wait({key}, timeout);
  send(RequestWriter(options_.numbering, Op::kGet).str(key).bytes());
  return read_bytes(deadline());
}

int64_t TcpStoreClient::add(const std::string& key, int64_t delta) {
  send(RequestWriter(options_.numbering, Op::kAdd).str(key).put(delta).bytes());
  return read_scalar<int64_t>(deadline());
}

std::string TcpStoreClient::compare_set(const std::string& key, const std::string& expected,
                                        const std::string& desired) {
  send(RequestWriter(options_.numbering, Op::kCompareSet).str(key).str(expected).str(desired).bytes());
  return read_bytes(deadline());
}

bool TcpStoreClient::check(const std::vector<std::string>& keys) {
  send(RequestWriter(options_.numbering, Op::kCheck).keys(keys).bytes());
  return read_scalar<uint8_t>(deadline()) == kCheckReady;
}

void TcpStoreClient::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  start_wait(keys);
  uint8_t reply = 0;
  try {
    socket_.recv_exact(&reply, 1, Clock::now() + timeout);
  } catch (const TimeoutError&) {
    if (cancel_wait()) return;  // the keys arrived just in time
    throw TimeoutError("timed out waiting for keys at the store " + address_);
  }
  expect_stop_waiting(reply);
}

bool TcpStoreClient::cancel_wait() {
  if (options_.numbering != Numbering::kV2) {
    socket_.close();  // 1.13 cannot cancel; a late reply would corrupt the stream
    return false;
  }
  // The server sends a STOP_WAITING it already owed before WAIT_CANCELED.
  send(RequestWriter(Numbering::kV2, Op::kCancelWait).bytes());
  uint8_t first = read_scalar<uint8_t>(deadline());
  if (first != kStopWaiting) return false;
  read_scalar<uint8_t>(deadline());  // the WAIT_CANCELED that follows
  return true;
}

int TcpStoreClient::start_wait(const std::vector<std::string>& keys) {
  send(RequestWriter(options_.numbering, Op::kWait).keys(keys).bytes());
  return socket_.fd();
}

void TcpStoreClient::finish_wait() { expect_stop_waiting(read_scalar<uint8_t>(deadline())); }

void TcpStoreClient::expect_stop_waiting(uint8_t reply) {
  if (reply == kStopWaiting) return;
  socket_.close();  // what follows in the stream cannot be trusted
  throw StoreError("the store at " + address_ + " answered WAIT with " + std::to_string(reply));
}

bool TcpStoreClient::delete_key(const std::string& key) {
  send(RequestWriter(options_.numbering, Op::kDeleteKey).str(key).bytes());
  return read_scalar<int64_t>(deadline()) == 1;
}

int64_t TcpStoreClient::num_keys() {
  send(RequestWriter(options_.numbering, Op::kGetNumKeys).bytes());
  return read_scalar<int64_t>(deadline());
}

std::vector<std::string> TcpStoreClient::multi_get(const std::vector<std::string>& keys,
                                                   std::chrono::milliseconds timeout) {
  std::vector<std::string> values;
  if (options_.numbering != Numbering::kV2) {
    for (const auto& k : keys) values.push_back(get(k, timeout));
    return values;
  }
  wait(keys, timeout);
  return multi_get_now(keys);
}

std::vector<std::optional<std::string>> TcpStoreClient::get_now(
    const std::vector<std::string>& keys) {
  if (options_.numbering != tcpstore::Numbering::kV2) return Store::get_now(keys);
  std::vector<std::optional<std::string>> out;
  for (auto& v : multi_get_now(keys)) {
    out.push_back(v.empty() ? std::nullopt : std::optional<std::string>(std::move(v)));
  }
  return out;
}

std::vector<std::string> TcpStoreClient::multi_get_now(const std::vector<std::string>& keys) {
  send(RequestWriter(options_.numbering, Op::kMultiGet).keys(keys).bytes());
  std::vector<std::string> values;
  auto d = deadline();
  for (size_t i = 0; i < keys.size(); ++i) values.push_back(read_bytes(d));
  return values;
}

void TcpStoreClient::multi_set(const std::vector<std::string>& keys,
                               const std::vector<std::string>& values) {
  if (keys.size() != values.size()) throw StoreError("multi_set needs one value per key");
  if (options_.numbering != Numbering::kV2) {
    for (size_t i = 0; i < keys.size(); ++i) set(keys[i], values[i]);
    return;
  }
  RequestWriter r(Numbering::kV2, Op::kMultiSet);
  r.put<uint64_t>(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) r.str(keys[i]).str(values[i]);
  send(r.bytes());
}

void TcpStoreClient::append(const std::string& key, const std::string& value) {
  send(RequestWriter(options_.numbering, Op::kAppend).str(key).str(value).bytes());
}

}  // namespace ddprun::store
