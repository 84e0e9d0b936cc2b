#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "store/tcpstore/tcp_store_protocol.h"

namespace ddprun::store::tcpstore {

/// One decoded request. Which fields are used depends on the op:
/// keys (SET..LIST), values (SET, COMPARE_SET's expected+desired, APPEND,
/// MULTI_SET, QUEUE_PUSH), delta (ADD; BARRIER: the members), u32 (VALIDATE's magic, PING's nonce).
struct Request {
  Op op = Op::kSet;
  std::vector<std::string> keys;
  std::vector<std::string> values;
  int64_t delta = 0;
  uint32_t u32 = 0;
};

/// Reassembles requests from a byte stream split anywhere, and tells a 1.13 client
/// from a 2.x one by its first bytes. Pure (no I/O), so it can be fuzzed.
/// Not thread-safe; one per connection.
class RequestDecoder {
 public:
  enum class Status { kNeedMore, kReady, kBad };

  void feed(const char* data, size_t size);

  /// Decodes the next complete request into `out`. kBad means the stream is
  /// malformed or breaks a limit; error() says how, and the connection must close.
  Status next(Request& out);

  Numbering numbering() const { return numbering_; }
  const std::string& error() const { return error_; }
  /// Bytes received but not yet decoded.
  size_t pending() const { return buf_.size() - pos_; }
  /// Once every byte received is decoded: forgets them, and gives back the memory a
  /// large request took (otherwise an idle connection keeps its largest request's
  /// size for its whole life: a round's state, on every agent's connection).
  void release_decoded();
  /// The memory the undecoded bytes hold (for tests).
  size_t capacity() const { return buf_.capacity(); }

 private:
  Status detect_numbering();
  Status bad(std::string why);

  std::string buf_;
  size_t pos_ = 0;
  Numbering numbering_ = Numbering::kUnknown;
  std::string error_;
};

}  // namespace ddprun::store::tcpstore
