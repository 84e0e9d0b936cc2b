#include "store/tcpstore/store_on_loop.h"

#include <algorithm>
#include <cstring>

#include "common/loop_waits.h"
#include "store/tcpstore/store_connect.h"
#include "store/tcpstore/tcp_store_request.h"

namespace ddprun::store {
namespace {

using namespace tcpstore;
using Clock = std::chrono::steady_clock;

// An answer read as it arrives: fields that are each an 8-byte or 4-byte integer or a
// string (u64 length + bytes), in the order the request's answer has them.
class Answer {
 public:
  enum class Field { kInt64, kUint32, kUint8, kString };
  explicit Answer(std::vector<Field> fields) : fields_(std::move(fields)) {}

  bool whole() const { return values_.size() == fields_.size(); }
  /// The bytes left of the field (or the string's length) being read: a read for no
  /// more never takes the start of what follows this answer in the stream (a
  /// CANCEL_WAIT's WAIT_CANCELED behind its STOP_WAITING).
  size_t wanted() const {
    if (whole()) return 0;
    return (length_ ? *length_ : field_size()) - part_.size();
  }
  /// Takes what came; false where it runs past the answer's end or a string's length
  /// is beyond the protocol's bound.
  bool take(const char* data, size_t size) {
    while (size > 0) {
      if (whole()) return false;
      size_t want = wanted();
      size_t n = std::min(want, size);
      part_.append(data, n);
      data += n;
      size -= n;
      if (n == want && !settle()) return false;
    }
    return true;
  }
  int64_t integer(size_t i) const { return scalar<int64_t>(i); }
  uint32_t small(size_t i) const { return scalar<uint32_t>(i); }
  uint8_t byte(size_t i) const { return scalar<uint8_t>(i); }
  std::string& string(size_t i) { return values_[i]; }

 private:
  template <typename T>
  T scalar(size_t i) const {
    T v = 0;
    std::memcpy(&v, values_[i].data(), sizeof(v));
    return v;
  }
  // The bytes of the next field, or of its length where it is a string.
  size_t field_size() const {
    switch (fields_[values_.size()]) {
      case Field::kUint32:
        return sizeof(uint32_t);
      case Field::kUint8:
        return sizeof(uint8_t);
      default:
        return sizeof(uint64_t);
    }
  }

  // A whole integer, length or string is in part_.
  bool settle() {
    if (fields_[values_.size()] == Field::kString && !length_) {
      uint64_t len = 0;
      std::memcpy(&len, part_.data(), sizeof(len));
      if (len > kMaxValueSize) return false;
      part_.clear();
      length_ = len;
      if (len > 0) return true;
    }
    values_.push_back(std::move(part_));
    part_.clear();
    length_.reset();
    return true;
  }

  std::vector<Field> fields_;
  std::vector<std::string> values_;
  std::string part_;               // of the field being read
  std::optional<uint64_t> length_;  // of the string being read, once known
};

// An answer of one field. (A braced list inside a co_await made GCC 12 (docs/contributing.md)
// reject the coroutine: "array used as initializer".)
std::vector<Answer::Field> one(Answer::Field f) { return std::vector<Answer::Field>(1, f); }

// What take_available() found.
enum class Taken { kSome, kNone, kMalformed };

// Takes what has come of `answer`, and no more than it wants.
Taken take_available(net::Socket& connection, Answer& answer) {
  char buffer[16384];
  size_t n = connection.recv_available(buffer, std::min(sizeof(buffer), answer.wanted()));
  if (n == 0) return Taken::kNone;
  return answer.take(buffer, n) ? Taken::kSome : Taken::kMalformed;
}

// Sends `request` on the client's connection (made again first where it was dropped),
// each wait for the kernel to take more the loop's completion.
Task<void> send(TcpStoreClient& client, const RequestWriter& request, CancelSignal& cancel) {
  co_await reconnect_on_loop(client, cancel);
  try {
    co_await send_on_loop(client.connection(), request.bytes(), Clock::now() + client.timeout(),
                          cancel);
  } catch (...) {
    client.drop();  // a request half sent: the stream is at an unknown point
    throw;
  }
}

// The answer to what was sent, read as it arrives within the client's call timeout:
// what is there already is read first, and the loop waits only when nothing is (an
// answer read field by field then costs no wait per field).
Task<Answer> receive(TcpStoreClient& client, Answer answer, CancelSignal& cancel) {
  net::Socket& connection = client.connection();
  auto deadline = Clock::now() + client.timeout();
  try {
    while (!answer.whole()) {
      Taken taken = take_available(connection, answer);
      if (taken == Taken::kMalformed) {
        throw StoreError("the store at " + client.address() + " sent a malformed answer");
      }
      if (taken == Taken::kSome) continue;
      if (!co_await wait_readable(connection.fd(), deadline, cancel)) {
        auto ms = client.timeout().count();
        throw TimeoutError("the store at " + client.address() + " did not answer within " +
                           (ms < 1000 ? std::to_string(ms) + " ms"
                                      : std::to_string((ms + 999) / 1000) + " s"));
      }
    }
  } catch (...) {
    client.drop();  // what is left of the answer would be read as the next one's
    throw;
  }
  co_return answer;
}

// One request and its answer, awaited on the loop.
Task<Answer> call(TcpStoreClient& client, const RequestWriter& request, Answer answer,
                  CancelSignal& cancel) {
  co_await send(client, request, cancel);
  co_return co_await receive(client, std::move(answer), cancel);
}

// WAIT's answer: STOP_WAITING once every key is there.
void expect_stop_waiting(TcpStoreClient& client, const Answer& answer) {
  if (answer.byte(0) == kStopWaiting) return;
  client.drop();  // what follows in the stream cannot be trusted
  throw StoreError("the store at " + client.address() + " answered WAIT with " +
                   std::to_string(answer.byte(0)));
}

}  // namespace

Task<std::vector<std::optional<std::string>>> get_now_on_loop(TcpStoreClient& client,
                                                              std::vector<std::string> keys,
                                                              CancelSignal& cancel) {
  std::vector<std::optional<std::string>> out;
  if (keys.empty()) co_return out;
  RequestWriter request(client.numbering(), Op::kMultiGet);
  request.keys(keys);
  Answer answer = co_await call(client, request,
                                Answer(std::vector(keys.size(), Answer::Field::kString)), cancel);
  out.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    std::string& v = answer.string(i);
    out.push_back(v.empty() ? std::nullopt : std::optional<std::string>(std::move(v)));
  }
  co_return out;
}

Task<void> set_on_loop(TcpStoreClient& client, std::string key, std::string value,
                       CancelSignal& cancel) {
  // SET has no answer: handed to the connection, it is in the store before whatever
  // this connection asks next.
  RequestWriter request(client.numbering(), Op::kSet);
  request.str(key).str(value);
  co_await send(client, request, cancel);
}

Task<void> multi_set_on_loop(TcpStoreClient& client, std::vector<std::string> keys,
                             std::vector<std::string> values, CancelSignal& cancel) {
  if (keys.size() != values.size()) throw StoreError("multi_set needs one value per key");
  RequestWriter request(client.numbering(), Op::kMultiSet);
  request.put<uint64_t>(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) request.str(keys[i]).str(values[i]);
  co_await send(client, request, cancel);
}

Task<int64_t> add_on_loop(TcpStoreClient& client, std::string key, int64_t delta,
                          CancelSignal& cancel) {
  RequestWriter request(client.numbering(), Op::kAdd);
  request.str(key).put(delta);
  Answer answer = co_await call(client, request, Answer(one(Answer::Field::kInt64)), cancel);
  co_return answer.integer(0);
}

Task<std::string> compare_set_on_loop(TcpStoreClient& client, std::string key,
                                      std::string expected, std::string desired,
                                      CancelSignal& cancel) {
  RequestWriter request(client.numbering(), Op::kCompareSet);
  request.str(key).str(expected).str(desired);
  Answer answer = co_await call(client, request, Answer(one(Answer::Field::kString)), cancel);
  co_return std::move(answer.string(0));
}

Task<bool> delete_on_loop(TcpStoreClient& client, std::string key, CancelSignal& cancel) {
  RequestWriter request(client.numbering(), Op::kDeleteKey);
  request.str(key);
  Answer answer = co_await call(client, request, Answer(one(Answer::Field::kInt64)), cancel);
  co_return answer.integer(0) > 0;
}

Task<uint32_t> ping_on_loop(TcpStoreClient& client, uint32_t nonce, CancelSignal& cancel) {
  RequestWriter request(client.numbering(), Op::kPing);
  request.put(nonce);
  Answer answer = co_await call(client, request, Answer(one(Answer::Field::kUint32)), cancel);
  co_return answer.small(0);
}

Task<bool> wait_on_loop(TcpStoreClient& client, std::vector<std::string> keys,
                        std::chrono::milliseconds timeout, CancelSignal& cancel) {
  RequestWriter request(client.numbering(), Op::kWait);
  request.keys(keys);
  co_await send(client, request, cancel);
  bool answered = false;
  try {
    answered = co_await wait_readable(client.connection().fd(), Clock::now() + timeout, cancel);
  } catch (...) {
    client.drop();  // its WAIT stays unanswered
    throw;
  }
  if (answered) {
    Answer stop = co_await receive(client, Answer(one(Answer::Field::kUint8)), cancel);
    expect_stop_waiting(client, stop);
    co_return true;
  }
  if (client.numbering() != Numbering::kV2) {
    client.drop();  // 1.13 cannot cancel a wait: a late answer would be read as another's
    co_return false;
  }
  // The server sends a STOP_WAITING it already owed before WAIT_CANCELED.
  RequestWriter withdraw(Numbering::kV2, Op::kCancelWait);
  Answer first = co_await call(client, withdraw, Answer(one(Answer::Field::kUint8)), cancel);
  if (first.byte(0) != kStopWaiting) co_return false;
  co_await receive(client, Answer(one(Answer::Field::kUint8)), cancel);  // its WAIT_CANCELED
  co_return true;
}

}  // namespace ddprun::store
