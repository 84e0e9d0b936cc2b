#include "store/tcpstore/tcp_store_decoder.h"

#include <cstring>

namespace ddprun::store::tcpstore {
namespace {

// Reads fields from the undecoded bytes; `short_` is set when they run out and
// `bad_` when a field breaks a limit. Nothing is consumed unless the whole
// request is there.
class Cursor {
 public:
  Cursor(const std::string& buf, size_t pos) : buf_(buf), pos_(pos) {}

  template <typename T>
  bool scalar(T& out) {
    if (!have(sizeof(T))) return false;
    std::memcpy(&out, buf_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }

  bool bytes(std::string& out, size_t limit, const char* what) {
    uint64_t len = 0;
    if (!scalar(len)) return false;
    if (len > limit) return fail(what);
    if (!have(len)) return false;
    out.assign(buf_.data() + pos_, len);
    pos_ += len;
    return true;
  }

  bool count(uint64_t& n) {
    if (!scalar(n)) return false;
    return n <= kMaxKeysPerRequest || fail("too many keys in one request");
  }

  bool key_list(std::vector<std::string>& keys) {
    uint64_t n = 0;
    if (!count(n)) return false;
    keys.resize(n);
    for (auto& k : keys)
      if (!bytes(k, kMaxKeySize, "key too long")) return false;
    return true;
  }

  size_t pos() const { return pos_; }
  bool is_short() const { return short_; }
  const char* bad() const { return bad_; }

 private:
  bool have(uint64_t n) {
    if (buf_.size() - pos_ >= n) return true;
    short_ = true;
    return false;
  }
  bool fail(const char* why) {
    bad_ = why;
    return false;
  }

  const std::string& buf_;
  size_t pos_;
  bool short_ = false;
  const char* bad_ = nullptr;
};

// Decodes the body of `op` (after its opcode byte).
bool decode_body(Cursor& c, Request& r) {
  r.keys.clear();
  r.values.clear();
  switch (r.op) {
    case Op::kValidate:
    case Op::kPing:
      return c.scalar(r.u32);
    case Op::kGetNumKeys:
    case Op::kCancelWait:
    case Op::kList:
      return true;
    case Op::kGet:
    case Op::kWatchKey:
    case Op::kDeleteKey:
    case Op::kQueuePop:
    case Op::kQueueLen:
      r.keys.resize(1);
      return c.bytes(r.keys[0], kMaxKeySize, "key too long");
    case Op::kAdd:
    case Op::kBarrier:
      r.keys.resize(1);
      return c.bytes(r.keys[0], kMaxKeySize, "key too long") && c.scalar(r.delta);
    case Op::kSet:
    case Op::kAppend:
    case Op::kQueuePush:
      r.keys.resize(1);
      r.values.resize(1);
      return c.bytes(r.keys[0], kMaxKeySize, "key too long") &&
             c.bytes(r.values[0], kMaxValueSize, "value too large");
    case Op::kCompareSet:
      r.keys.resize(1);
      r.values.resize(2);
      return c.bytes(r.keys[0], kMaxKeySize, "key too long") &&
             c.bytes(r.values[0], kMaxValueSize, "value too large") &&
             c.bytes(r.values[1], kMaxValueSize, "value too large");
    case Op::kCheck:
    case Op::kWait:
    case Op::kMultiGet:
      return c.key_list(r.keys);
    case Op::kMultiSet: {
      uint64_t n = 0;
      if (!c.count(n)) return false;
      r.keys.resize(n);
      r.values.resize(n);
      for (uint64_t i = 0; i < n; ++i) {
        if (!c.bytes(r.keys[i], kMaxKeySize, "key too long") ||
            !c.bytes(r.values[i], kMaxValueSize, "value too large")) {
          return false;
        }
      }
      return true;
    }
  }
  return false;
}

}  // namespace

void RequestDecoder::feed(const char* data, size_t size) {
  // Drop what was decoded before growing the buffer again.
  if (pos_ > 0 && pos_ >= buf_.size() / 2) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  buf_.append(data, size);
}

void RequestDecoder::release_decoded() {
  if (pos_ < buf_.size()) return;
  pos_ = 0;
  if (buf_.capacity() > kKeptBufferBytes) {
    std::string().swap(buf_);
  } else {
    buf_.clear();
  }
}

RequestDecoder::Status RequestDecoder::bad(std::string why) {
  error_ = std::move(why);
  return Status::kBad;
}

RequestDecoder::Status RequestDecoder::detect_numbering() {
  size_t avail = pending();
  if (avail == 0) return Status::kNeedMore;
  if (buf_[pos_] != 0) {
    numbering_ = Numbering::kV113;
    return Status::kReady;
  }
  // 0x00 is 2.x VALIDATE only when the magic follows; otherwise a 1.13 SET.
  uint32_t magic = kValidationMagic;
  size_t n = std::min<size_t>(avail - 1, sizeof(magic));
  if (std::memcmp(buf_.data() + pos_ + 1, &magic, n) != 0) {
    numbering_ = Numbering::kV113;
    return Status::kReady;
  }
  if (n < sizeof(magic)) return Status::kNeedMore;
  numbering_ = Numbering::kV2;
  return Status::kReady;
}

RequestDecoder::Status RequestDecoder::next(Request& out) {
  if (!error_.empty()) return Status::kBad;
  if (numbering_ == Numbering::kUnknown) {
    Status s = detect_numbering();
    if (s != Status::kReady) return s;
  }
  if (pending() == 0) return Status::kNeedMore;
  auto op = op_from_wire(numbering_, static_cast<uint8_t>(buf_[pos_]));
  if (!op) return bad("unknown opcode " + std::to_string(static_cast<uint8_t>(buf_[pos_])));
  out.op = *op;
  Cursor c(buf_, pos_ + 1);
  if (!decode_body(c, out)) {
    if (c.bad()) return bad(c.bad());
    if (pending() > kMaxRequestSize) return bad("request too large");
    return Status::kNeedMore;
  }
  if (out.op == Op::kValidate && out.u32 != kValidationMagic) return bad("bad validation magic");
  pos_ = c.pos();
  return Status::kReady;
}

}  // namespace ddprun::store::tcpstore
