#include "store/tcpstore/store_on_loop.h"

#include <cstring>

#include "common/loop_waits.h"
#include "store/tcpstore/store_connect.h"
#include "store/tcpstore/tcp_store_request.h"

namespace ddprun::store {
namespace {

using namespace tcpstore;
using Clock = std::chrono::steady_clock;

// An answer read as it arrives: fields that are each an 8-byte integer or a string
// (u64 length + bytes), in the order the request's answer has them.
class Answer {
 public:
  enum class Field { kInt64, kString };
  explicit Answer(std::vector<Field> fields) : fields_(std::move(fields)) {}

  bool whole() const { return values_.size() == fields_.size(); }
  /// Takes what came; false where it runs past the answer's end or a string's length
  /// is beyond the protocol's bound.
  bool take(const char* data, size_t size) {
    while (size > 0) {
      if (whole()) return false;
      size_t want = (length_ ? *length_ : sizeof(uint64_t)) - part_.size();
      size_t n = std::min(want, size);
      part_.append(data, n);
      data += n;
      size -= n;
      if (n == want && !settle()) return false;
    }
    return true;
  }
  int64_t integer(size_t i) const {
    int64_t v = 0;
    std::memcpy(&v, values_[i].data(), sizeof(v));
    return v;
  }
  std::string& string(size_t i) { return values_[i]; }

 private:
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

// An answer of one field. (A braced list inside a co_await made GCC 12 reject the
// coroutine: "array used as initializer".)
std::vector<Answer::Field> one(Answer::Field f) { return std::vector<Answer::Field>(1, f); }

// One request and its answer, awaited on the loop.
Task<Answer> call(TcpStoreClient& client, const RequestWriter& request, Answer answer,
                  CancelSignal& cancel) {
  co_await reconnect_on_loop(client, cancel);
  int fd = client.send_request(request.bytes());
  auto deadline = Clock::now() + client.timeout();
  try {
    char buffer[16384];
    while (!answer.whole()) {
      if (!co_await wait_readable(fd, deadline, cancel)) {
        auto ms = client.timeout().count();
        throw TimeoutError("the store at " + client.address() + " did not answer within " +
                           (ms < 1000 ? std::to_string(ms) + " ms"
                                      : std::to_string((ms + 999) / 1000) + " s"));
      }
      size_t n = client.read_available(buffer, sizeof(buffer));
      if (!answer.take(buffer, n)) {
        throw StoreError("the store at " + client.address() + " sent a malformed answer");
      }
    }
  } catch (...) {
    client.drop();  // what is left of the answer would be read as the next one's
    throw;
  }
  co_return answer;
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
  co_await reconnect_on_loop(client, cancel);
  // SET has no answer: handed to the connection, it is in the store before whatever
  // this connection asks next.
  RequestWriter request(client.numbering(), Op::kSet);
  client.send_request(request.str(key).str(value).bytes());
  co_return;
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

}  // namespace ddprun::store
